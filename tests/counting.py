"""A counting wrapper around the real embedder, for tests that check what gets embedded.

Not a mock: the vectors come from the wrapped embedder; only the requests are recorded.
"""

from __future__ import annotations


class CountingEmbedder:
    def __init__(self, inner) -> None:
        self.inner = inner
        self.model_id, self.dim, self.default_thresholds = inner.model_id, inner.dim, inner.default_thresholds
        self.calls: list[tuple[list[str], str]] = []
        """Every call: (texts, role)."""
        self.texts: list[str] = []
        """Every text embedded, in any role."""
        self.passages: list[str] = []
        """Passage-role texts only (what the stores embed for their own data)."""

    def embed(self, texts, *, role="passage"):
        texts = list(texts)
        self.calls.append((texts, role))
        self.texts.extend(texts)
        if role == "passage":
            self.passages.extend(texts)
        return self.inner.embed(texts, role=role)
