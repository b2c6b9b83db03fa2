"""MkDocs hook: the reference pages, generated from the code at every build so they cannot drift.

- reference/configuration.md from the pydantic models (`engine.config.EngineConfig` and its
  sections): every key, dotted, with its type, default, whether a character folder may set it,
  and the field's docstring.
- reference/cli.md from the argparse parser (`engine.cli.build_parser()`): every command and
  sub-command with its help, usage, arguments and example.

Nothing generated is checked in: `mkdocs build` and `mkdocs serve` add both pages to the site.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
CONFIG_PAGE = "reference/configuration.md"
CLI_PAGE = "reference/cli.md"


def on_files(files: Files, config: Any) -> Files:
    if str(ROOT) not in sys.path and (ROOT / "engine").is_dir():
        sys.path.insert(0, str(ROOT))
    files.append(File.generated(config, CONFIG_PAGE, content=config_reference()))
    files.append(File.generated(config, CLI_PAGE, content=cli_reference()))
    return files


# -- configuration ---------------------------------------------------------------------------------


def config_reference() -> str:
    from pydantic import BaseModel

    from engine.config import EngineConfig
    from engine.trust import character_may_set

    out = [
        "# Configuration reference",
        "",
        "Generated from the configuration models (`engine/config.py`, `engine/config_models.py`) when the",
        "manual is built: every key config.yaml accepts, with its type, its default and what it means.",
        "[Configuration](../configuration.md) explains how files, characters and the environment combine.",
        "",
        "- A key is written nested in YAML (`diary:` then `  search: false`), or as an environment variable",
        "  `KIOKU__SECTION__KEY` (`KIOKU__DIARY__SEARCH=false`; the value is read as YAML).",
        "- **Character** says whether a character folder may set the key under `config:` in its",
        "  `character.yaml` ([what a character folder may change](../security.md#what-a-character-folder-may-change));",
        "  the other keys are the operator's alone.",
        "- Secrets never live in a file: each `*_env` key names the environment variable that holds one.",
        "- An unknown key, or a value of the wrong type, is an error naming the key, the file and the line.",
        "",
    ]

    def section(model: type[BaseModel], prefix: tuple[str, ...], title: str, note: str = "") -> None:
        rows, subsections = [], []
        for name, field in model.model_fields.items():
            if field.exclude:  # secrets, filled from the environment
                continue
            path = prefix + (name,)
            sub = _model_in(field.annotation, BaseModel)
            if sub is not None:
                optional = type(None) in get_args(field.annotation)
                rows.append(_row(path, f"section{' or null' if optional else ''}", field.default if optional else None,
                                 field.description or "", character_may_set(path), link=".".join(path)))
                subsections.append((sub, path, field))
                continue
            default = field.get_default(call_default_factory=True)
            rows.append(_row(path, _type_name(field.annotation) + _bounds(field.metadata), default,
                             field.description or "", character_may_set(path)))
        out.extend([f"## {title}", ""])
        if note:
            out.extend([note, ""])
        out.extend(["| key | type | default | character | meaning |", "|---|---|---|---|---|", *rows, ""])
        for sub, path, field in subsections:
            dotted = ".".join(path)
            note = ""
            if type(None) in get_args(field.annotation):
                note = (f"`{dotted}` is unset (`null`) by default; when it is set, these keys apply, with these "
                        "defaults.")
            section(sub, path, f"`{dotted}`", note)

    section(EngineConfig, (), "Top level")
    return "\n".join(out) + "\n"


def _model_in(annotation: Any, base: type) -> type | None:
    """The pydantic model an annotation is (or holds in a union with None), else None."""
    if isinstance(annotation, type) and issubclass(annotation, base):
        return annotation
    if get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in get_args(annotation):
            if isinstance(arg, type) and issubclass(arg, base):
                return arg
    return None


_TYPE_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path", type(None): "null"}


def _type_name(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return "one of " + ", ".join(f"`{json.dumps(a, ensure_ascii=False)}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in args)
    if origin is list:
        if not args:
            return "list"
        inner = _type_name(args[0])
        return f"list, each {inner}" if inner.startswith("one of") else f"list of {inner}"
    if origin is dict:
        return f"mapping of {_type_name(args[0])} to {_type_name(args[1])}" if args else "mapping"
    if annotation in _TYPE_NAMES:
        return _TYPE_NAMES[annotation]
    return getattr(annotation, "__name__", str(annotation))


def _bounds(metadata: list[Any]) -> str:
    signs = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<"}
    parts = [f"{sign} {getattr(m, key)}" for m in metadata for key, sign in signs.items() if hasattr(m, key)]
    return f", {', '.join(parts)}" if parts else ""


def _row(path: tuple[str, ...], kind: str, default: Any, description: str, character: bool, link: str = "") -> str:
    from pydantic_core import to_jsonable_python

    key = f"`{'.'.join(path)}`"
    if link:
        key = f"[{key}](#{_anchor(link)})"
    value = "—" if kind.startswith("section") and default is None and "null" not in kind else (
        f"`{json.dumps(to_jsonable_python(default), ensure_ascii=False)}`")
    return "| " + " | ".join([
        key, _cell(kind), value, "yes" if character else "no", _cell(" ".join(description.split()) or "—"),
    ]) + " |"


def _anchor(dotted: str) -> str:
    """The id Python-Markdown's toc gives the heading "`dotted`" (letters, digits, _ and - kept)."""
    return re.sub(r"[^\w-]", "", dotted.lower())


def _text(text: str) -> str:
    """Help text as Markdown: outside code spans `<`, `>` and `&` are escaped (they are not HTML)."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = html.escape(parts[i], quote=False)
    return "`".join(parts)


def _cell(text: str) -> str:
    """Text for a table cell: `_text`, and its pipes escaped so they do not split the cell."""
    return _text(text).replace("|", "\\|")


# -- command line ------------------------------------------------------------------------------------


def cli_reference() -> str:
    from engine.cli import build_parser

    parser = build_parser()
    out = [
        "# CLI reference",
        "",
        "Generated from the command's parsers (`engine/cli.py` and the modules it registers) when the",
        "manual is built. `kioku COMMAND --help` prints the same help; [Getting started](../getting-started.md)",
        "shows the commands at a glance.",
        "",
        "```text",
        _usage(parser).rstrip(),
        "```",
        "",
        parser.description or "",
        "",
        *_arguments(parser),
    ]
    for name, sub, help_text in _subcommands(parser):
        out.extend(_command_section(sub, help_text, level=2))
    return "\n".join(out).rstrip() + "\n"


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser, str]]:
    """(name, parser, help) of every sub-command of `parser`, in the order they were added."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) in seen:  # an alias
                    continue
                seen.add(id(sub))
                found.append((name, sub, helps.get(name, "")))
    return found


def _command_section(parser: argparse.ArgumentParser, help_text: str, *, level: int) -> list[str]:
    out = [f"{'#' * level} {parser.prog}", ""]
    description = parser.description or help_text
    if description:
        out.extend([_text(description), ""])
    out.extend(["```text", _usage(parser).rstrip(), "```", ""])
    out.extend(_arguments(parser))
    example = (parser.epilog or "").strip()
    if example:
        if example.startswith("example:"):
            example = example[len("example:"):]
        # Alternatives share one example line, separated by "   |   " (not a shell pipe).
        lines = [part.strip() for line in example.splitlines() for part in line.split("   |   ") if part.strip()]
        out.extend(["Example:", "", "```bash", *lines, "```", ""])
    for _, sub, sub_help in _subcommands(parser):
        out.extend(_command_section(sub, sub_help, level=level + 1))
    return out


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=100)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help()


def _arguments(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.option_strings:
            names = ", ".join(f"`{o}`" for o in action.option_strings)
            if action.nargs != 0:
                names = names[:-1] + f" {action.metavar or action.dest.upper()}`"
        else:
            names = f"`{action.metavar or action.dest}`"
        meaning = _help(action)
        if action.choices is not None:
            choices = "one of " + ", ".join(f"`{c}`" for c in action.choices)
            meaning = f"{meaning}; {choices}" if meaning else choices
        default = action.default
        if (action.option_strings and default not in (None, False, argparse.SUPPRESS, [])
                and "default" not in meaning):
            meaning += f" (default: `{default}`)"
        rows.append(f"| {names} | {_cell(meaning) if meaning else '—'} |")
    if not rows:
        return []
    return ["| argument | meaning |", "|---|---|", *rows, ""]


def _help(action: argparse.Action) -> str:
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
    if params.get("choices") is not None:
        params["choices"] = ", ".join(map(str, params["choices"]))
    return action.help % params
