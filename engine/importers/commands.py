"""`kioku import` and `kioku export`: what a user owns elsewhere (a MoeChat folder, SillyTavern cards,
lorebooks and chat logs) brought in or written back. Registered by `engine/cli.py` as `kioku db`
and `kioku mcp` are; the readers and writers themselves are the importers' modules."""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import Any


def _config(args: argparse.Namespace):
    from engine.config import open_config

    return open_config(path=args.config, data_dir=args.data_dir)


def add_import_parser(sub: Any, command: Any, common: Any) -> tuple[argparse.ArgumentParser, Any]:
    """Register `kioku import` (`command` is cli's `_command`, `common` its `_common`)."""
    p = command(sub, "import",
                help="import a MoeChat data folder, or a SillyTavern character card or lorebook",
                example="kioku import moechat ~/MoeChat --user me --tz Asia/Shanghai\n"
                        "  kioku import card Seraphina.png\n  kioku import lorebook Eldoria.json --char Seraphina")
    p.add_argument("source", choices=["moechat", "card", "lorebook", "sillytavern-chat"],
                   help="moechat: a MoeChat folder; card: a SillyTavern card (PNG, JSON, CHARX); "
                        "lorebook: SillyTavern World Info or lorebook_v3 JSON; sillytavern-chat: a chat log (JSONL)")
    p.add_argument("root", type=Path, help="MoeChat's folder holding config.yaml and data/; or the card / lorebook file")
    p.add_argument("--char", default=None, help="kioku character id (moechat: default MoeChat's Agent.char; card: "
                   "default the card's name; lorebook: the character whose world book it joins)")
    p.add_argument("--name", default=None, help="lorebook: the world-book file name (default: the file's)")
    p.add_argument("--overwrite", action="store_true", help="card / lorebook: replace what exists")
    p.add_argument("--agent", default=None, help="folder under data/agents/ to import (default: --char, else Agent.char)")
    p.add_argument("--tz", default=None, help="zone MoeChat's / SillyTavern's machine ran in (default: the config's timezone)")
    p.add_argument("--keep-thresholds", action="store_true",
                   help="copy MoeChat's similarity thresholds (tuned for its own embedding model)")
    p.add_argument("--overwrite-lore", action="store_true", help="replace world-book files that differ")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    common(p)
    return p, functools.partial(run_import, p)


def run_import(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from engine.importers.moechat import import_moechat
    from engine.importers.report import format_report

    if args.source in ("card", "lorebook", "sillytavern-chat"):
        from engine.importers import sillytavern

        if args.source == "sillytavern-chat":
            from engine.importers.sillytavern_chat import import_sillytavern_chat

            if not args.char:
                parser.error("import sillytavern-chat needs --char: the character the chat was with")
            report = import_sillytavern_chat(args.root, user_id=args.user, character=args.char, tz=args.tz,
                                             config=_config(args), progress=not args.no_progress and sys.stderr.isatty())
            print(format_report(report))
            return 0
        if args.source == "card":
            done = sillytavern.import_card(args.root, _config(args), character_id=args.char, overwrite=args.overwrite)
        else:
            if not args.char:
                parser.error("import lorebook needs --char: the character whose world book it joins")
            done = sillytavern.import_lorebook(args.root, _config(args), character_id=args.char, name=args.name,
                                               overwrite=args.overwrite)
        print(done)
        return 0

    report = import_moechat(
        args.root, user_id=args.user, char=args.char, agent=args.agent, tz=args.tz,
        config=_config(args), keep_thresholds=args.keep_thresholds,
        overwrite_lore=args.overwrite_lore, progress=not args.no_progress and sys.stderr.isatty(),
    )
    print(format_report(report))
    return 0


def add_export_parser(sub: Any, command: Any, common: Any) -> tuple[argparse.ArgumentParser, Any]:
    """Register `kioku export`."""
    p = command(sub, "export",
                help="write a character as a SillyTavern card, or a world-book file as a lorebook",
                example="kioku export card --char Seraphina -o Seraphina.png\n"
                        "  kioku export lorebook --char Seraphina --file Eldoria -o Eldoria.json")
    p.add_argument("what", choices=["card", "lorebook"])
    p.add_argument("--char", required=True, help="the character id")
    p.add_argument("--file", default=None, help="lorebook: the world-book file name (default: the card's book)")
    p.add_argument("--format", default=None, choices=["png", "json", "charx", "worldinfo", "lorebook_v3", "character_book"],
                   help="card: png, json or charx (default: by the output's extension); lorebook: the shape "
                        "(default: the one it was imported in)")
    p.add_argument("-o", "--output", type=Path, required=True, help="file to write")
    common(p, user=False)
    return p, run_export


def run_export(args: argparse.Namespace) -> int:
    from engine.fileio import atomic_write_bytes
    from engine.importers import sillytavern

    if args.what == "card":
        fmt = args.format or {".json": "json", ".charx": "charx"}.get(args.output.suffix.lower(), "png")
        data = sillytavern.export_card(_config(args), character_id=args.char, fmt=fmt)
    else:
        data = sillytavern.export_lorebook(_config(args), character_id=args.char, name=args.file or sillytavern.CARD_BOOK,
                                           shape=args.format)
    atomic_write_bytes(args.output, data)
    print(f"wrote {args.output} ({len(data):,} bytes)")
    return 0
