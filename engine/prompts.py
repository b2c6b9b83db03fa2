"""Prompt templates, one text file per template and language, `{{name}}` placeholders.

The defaults ship in the top-level `prompts/` folder (installed as `engine.default_prompts`);
a `prompts_dir` folder with the same layout overrides them file by file.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

from engine.errors import ConfigError


class Prompts:
    def __init__(self, language: str, *, override_dir: Path | None = None) -> None:
        self.language = language
        self._override = Path(override_dir) if override_dir else None

    @functools.cache  # noqa: B019 - a handful of templates per instance, kept for its lifetime
    def get(self, name: str) -> str:
        filename = f"{name}.txt"
        if self._override is not None:
            candidate = self._override / self.language / filename
            if candidate.is_file():
                return candidate.read_text(encoding="utf-8")
        node = resources.files("engine.default_prompts").joinpath(self.language, filename)
        if not node.is_file():
            raise ConfigError(f"no prompt template {self.language}/{filename} in the prompts folder")
        return node.read_text(encoding="utf-8")

    def render(self, name: str, **values: object) -> str:
        return render(self.get(name), **values)


def render(template: str, **values: object) -> str:
    """Replace `{{key}}` placeholders; unknown placeholders (e.g. {{user}} in lore) are left alone."""
    out = template
    for key, value in values.items():
        out = out.replace("{{" + key + "}}", str(value))
    return out.strip()
