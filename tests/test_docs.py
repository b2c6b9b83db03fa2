"""The manual: `mkdocs build --strict` of docs/ (a broken link or anchor, a page missing from the nav
or a nav entry without a page fails it), and the reference pages it generates name every config
key and every command-line option of the code as it is now."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parent.parent


def _mkdocs_build(config_file: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config_file), "--site-dir", str(site)],
        cwd=config_file.parent, env=env, capture_output=True, text=True, timeout=120,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs", reason="the dev extra installs mkdocs (bash scripts/setup.sh --dev)")
    out = tmp_path_factory.mktemp("site")
    result = _mkdocs_build(ROOT / "mkdocs.yml", out)
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def _page_text(site: Path, page: str) -> str:
    """A built page's text without tags, entities resolved and whitespace collapsed."""
    raw = (site / page / "index.html").read_text(encoding="utf-8")
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", raw)).split())


def _normal(text: str) -> str:
    return " ".join(text.replace("`", " ").split())


def test_every_page_is_built(site):
    pages = sorted(p.relative_to(ROOT / "docs").with_suffix("") for p in (ROOT / "docs").rglob("*.md"))
    assert len(pages) >= 15
    for page in pages:
        built = site / ("" if page.name == "index" else page) / "index.html"
        assert built.is_file(), page
    for image in (ROOT / "docs" / "inspector").glob("*.png"):
        assert (site / "inspector" / image.name).is_file(), image.name


def test_reference_pages_are_generated_not_checked_in():
    assert not (ROOT / "docs" / "reference").exists()


def _config_keys() -> list[tuple[str, object]]:
    """(dotted key, field) of every key config.yaml accepts, read off the models themselves."""
    from engine.config import EngineConfig

    keys = []

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, field in model.model_fields.items():
            if field.exclude:  # secrets: only ever from the environment
                continue
            key = f"{prefix}{name}"
            keys.append((key, field))
            candidates = [field.annotation, *getattr(field.annotation, "__args__", ())]
            for sub in candidates:
                if isinstance(sub, type) and issubclass(sub, BaseModel):
                    walk(sub, f"{key}.")

    walk(EngineConfig, "")
    return keys


def test_configuration_reference_lists_every_key(site):
    raw = (site / "reference" / "configuration" / "index.html").read_text(encoding="utf-8")
    text = _page_text(site, "reference/configuration")
    keys = _config_keys()
    assert len(keys) > 100
    for key, field in keys:
        assert f"<code>{key}</code>" in raw, key
        if field.description:
            assert _normal(field.description) in _normal(text), key


def _commands():
    """(prog, parser) of every command and sub-command `kioku` has, read off its parser."""
    import argparse

    from engine.cli import build_parser

    found = []

    def walk(parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in dict.fromkeys(action.choices.values()):
                    found.append((sub.prog, sub))
                    walk(sub)

    root = build_parser()
    walk(root)
    return root, found


def test_cli_reference_lists_every_command_and_option(site):
    import argparse

    raw = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    text = _page_text(site, "reference/cli")
    root, commands = _commands()
    assert len(commands) >= 10
    for prog, parser in [(root.prog, root), *commands]:
        if parser is not root:
            assert re.search(rf"<h2 id=\"[^\"]*\">{re.escape(prog)}\b", raw), prog
            assert _normal(parser.description or "") in _normal(text), prog
            example = (parser.epilog or "").removeprefix("example:").split("   |   ")[0].strip()
            assert example and _normal(example) in _normal(text), prog
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            for name in action.option_strings or [action.metavar or action.dest]:
                assert re.search(rf"<code>{re.escape(name)}\b", raw), f"{prog} {name}"


def test_broken_link_and_pages_outside_the_nav_fail_the_build(tmp_path):
    """The strictness the manual relies on: a link to no page, a page the nav leaves out and a nav
    entry with no page each fail `mkdocs build --strict`."""
    pytest.importorskip("mkdocs", reason="the dev extra installs mkdocs (bash scripts/setup.sh --dev)")
    shutil.copytree(ROOT / "docs", tmp_path / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "\nnav:\n" in config
    (tmp_path / "mkdocs.yml").write_text(config.replace("\nnav:\n", "\nnav:\n  - Gone: gone.md\n"), encoding="utf-8")
    with (tmp_path / "docs" / "index.md").open("a", encoding="utf-8") as f:
        f.write("\nSee [the missing page](missing.md).\n")
    (tmp_path / "docs" / "orphan.md").write_text("# Orphan\n", encoding="utf-8")
    result = _mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    for name in ("missing.md", "orphan.md", "gone.md"):
        assert name in output, (name, output)


def test_readme_links_reach_the_manual():
    """The README is the front door: its relative links open existing pages of docs/."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((?!https?://)([^)#]+)", readme)
    assert len(links) >= 10
    for link in links:
        assert (ROOT / link).is_file(), link
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")} - {"docs/index.md"}
    assert pages <= set(links), sorted(pages - set(links))
