"""Text for the lexical index: Chinese segmented by jieba (rjieba, the Rust port), everything else
left to PostgreSQL's text-search parser.

PostgreSQL's parser splits on spaces and punctuation, so a Chinese sentence would be one token;
segmenting it first (`我 喜欢 吃 火锅`) lets a GIN-indexed `tsvector` find `火锅`. Documents are cut
"for search" (a long word is also indexed as its shorter words: 国家博物馆 -> 国家, 博物, 博物馆,
国家博物馆), queries are cut plainly; a query word then matches documents that hold it as a word
or inside a longer one.
"""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\U00020000-\U0002ffff]")
MAX_INDEXED_CHARS = 20_000
"""Characters of a turn that are indexed lexically. A tsvector is limited to 1 MB and positions
to 16,383; a longer turn is indexed by its start (its vector covers the whole turn's meaning)."""


def _cut(text: str, *, for_search: bool) -> str:
    if not _CJK.search(text):
        return text
    import rjieba  # imported on first use: the dictionary load costs ~0.1 s

    words = rjieba.cut_for_search(text) if for_search else rjieba.cut(text)
    return " ".join(w for w in words if w.strip())


def document_text(user: str, assistant: str) -> str:
    """The text a turn is indexed under (both sides of the turn)."""
    return _cut(f"{user}\n{assistant}"[:MAX_INDEXED_CHARS], for_search=True)


def query_text(text: str) -> str:
    return _cut(text[:MAX_INDEXED_CHARS], for_search=False)
