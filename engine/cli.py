"""`kioku`: a thin shell over the library. Every command has --help with an example."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import NoReturn

from engine.errors import EngineError

Handler = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, tuple[argparse.ArgumentParser, Handler]] = {}
USAGE_ERROR = 2


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (argparse prints the usage block first; the value and the
    hint to --help are what a user needs)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message} (see: {self.prog} --help)\n")


def _command(sub, name: str, *, help: str, example: str) -> argparse.ArgumentParser:
    parser = sub.add_parser(
        name, help=help, description=help, epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def _iso_time(value: str) -> datetime:
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an ISO date-time (e.g. 2026-11-22T20:30)") from None


def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number (1-65535)")
    return port


def _positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of at least 1")
    return n


def _common(p: argparse.ArgumentParser, *, user: bool = True) -> None:
    p.add_argument("--config", type=Path, default=None, help="config file (default: ./config.yaml, else built-in defaults)")
    p.add_argument("--data-dir", type=Path, default=None, help="data folder holding agents/ (default: from config)")
    if user:
        p.add_argument("--user", default="default", help="user id (default: %(default)s)")


def _config(args: argparse.Namespace):
    from engine.config import open_config

    return open_config(path=args.config, data_dir=args.data_dir)


def _open(args: argparse.Namespace, *, progress: bool = False, config=None):
    from engine.orchestrator import MemoryOrchestrator

    return MemoryOrchestrator.from_config(
        args.character, config=config if config is not None else _config(args), progress=progress
    )


def _usage(args: argparse.Namespace, message: str) -> NoReturn:
    COMMANDS[args.command][0].error(message)


def cmd_demo(args: argparse.Namespace) -> int:
    from engine.demo import run_demo

    run_demo(args.keep)
    return 0


def cmd_prompt(args: argparse.Namespace) -> int:
    from engine.show import format_result, result_json

    with _open(args) as orch:
        result = orch.build_prompt(args.message, user_id=args.user, now=args.now)
    print(result_json(result) if args.json else format_result(result))
    return 0


def cmd_chat(args: argparse.Namespace) -> int:
    from engine.factory import make_llm

    with _open(args) as orch:
        llm = make_llm(orch.config.llm)
        if llm is None:
            print("no LLM configured: set llm.backend: openai in config.yaml (see docs/configuration.md)", file=sys.stderr)
            return 2
        print(f"chatting with {orch.character.name} as {args.user}; empty line or Ctrl-D to quit")
        while True:
            try:
                line = input("> ").strip()
            except EOFError:
                break
            if not line:
                break
            result = orch.build_prompt(line, user_id=args.user)
            if args.show:
                from engine.show import format_result

                print(format_result(result, show_messages=False))
            try:
                reply = llm.complete(result.messages)
            except EngineError as exc:
                print(f"(LLM error: {exc})", file=sys.stderr)
                continue
            print(f"{orch.character.name}: {reply}")
            orch.record_turn(line, reply, user_id=args.user)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from engine.admin import check_world_book_folder

    if args.folder.is_file():  # a SillyTavern card or lorebook, checked as `kioku import` would read it
        from engine.importers.sillytavern import check_file

        found = check_file(args.folder)
        print("\n".join(found) if found else f"{args.folder}: ok")
        return 1 if found else 0
    problems = check_world_book_folder(args.folder)
    if problems:
        print(problems)
        return 1
    print(f"{args.folder}: ok")
    return 0


def cmd_reindex(args: argparse.Namespace) -> int:
    from engine.admin import clear_cache

    config = _config(args)
    removed = clear_cache(config, args.character)  # before opening: nothing may hold the old files
    if removed:
        print(f"removed {removed}")
    with _open(args, progress=True, config=config) as orch:
        admin = orch.admin
        for line in admin.world_book_summary():
            print(line)
        for user in admin.user_ids():
            report = admin.reindex(user, progress=True)
            print(f"user {user}: diary {report.diary_turns} turns, core {report.facts} facts")
            if args.dates:
                print(f"user {user}: dates of {admin.redate(user)} turns resolved again")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """Every store's problems and the journal's unfinished work; exit 1 when anything needs a look."""
    with _open(args) as orch:
        status = orch.admin.status()
        for line in status.lines():
            print(line)
        if status.ok:
            print(f"{status.character}: ok")
    return 0 if status.ok else 1


def cmd_facts(args: argparse.Namespace) -> int:
    text = " ".join(args.text).strip()
    if args.action in ("add", "edit") and not text:
        _usage(args, f"'facts {args.action}' needs the fact text, e.g. kioku facts {args.character} add 讨厌吃香菜")
    if args.action in ("edit", "delete") and not args.id:
        _usage(args, f"'facts {args.action}' needs --id (see: kioku facts {args.character} list)")
    if args.action in ("list", "delete") and text:
        _usage(args, f"'facts {args.action}' takes no text (got {text!r})")
    with _open(args) as orch:
        facts = orch.admin.facts
        if args.action == "list":
            for fact in facts.list(args.user):
                print(f"{fact.id}  {fact.learned_at:%Y-%m-%d}  {fact.text}")
        elif args.action == "add":
            added = facts.add(args.user, text)
            print(f"added {added.fact.id}" if added.created else f"kept {added.fact.id} ({added.note})")
        elif args.action == "edit":
            facts.edit(args.user, args.id, text)
            print(f"updated {args.id}")
        elif args.action == "delete":
            facts.delete(args.user, args.id)
            print(f"deleted {args.id}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from engine.service.run import serve

    from engine.backends.db_cli import storage_line

    line = storage_line(_config(args))  # Postgres: down, or an older/newer schema, stops the start here
    if line:
        print(line, file=sys.stderr, flush=True)
    serve(args.config, host=args.host, port=args.port, workers=args.workers, data_dir=args.data_dir)
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    from engine.config import load_config, render_default_config

    if args.check:
        load_config(args.check)
        print(f"{args.check}: ok")
        return 0
    print(render_default_config(), end="")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kioku", description="A multi-tier character memory engine (記憶).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  kioku demo",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the engine does")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_conversation_commands(sub)
    _add_upkeep_commands(sub)
    from engine.importers import commands as cli_files

    COMMANDS["import"] = cli_files.add_import_parser(sub, _command, _common)
    COMMANDS["export"] = cli_files.add_export_parser(sub, _command, _common)
    _add_serve_command(sub)

    from engine.backends import db_cli as cli_db

    COMMANDS["db"] = cli_db.add_parser(sub, _command, _common)
    from engine.mcp import stdio as cli_mcp

    COMMANDS["mcp"] = cli_mcp.add_parser(sub, _command, _common)
    return parser


def _register(sub, name: str, handler: Handler, *, help: str, example: str) -> argparse.ArgumentParser:
    """Add the subcommand `name` (with its help and example) and remember its parser and handler."""
    p = _command(sub, name, help=help, example=example)
    COMMANDS[name] = (p, handler)
    return p


def _add_conversation_commands(sub) -> None:
    """demo, prompt, chat: talking to a character."""
    p = _register(sub, "demo", cmd_demo,
                  help="replay a scripted multi-day conversation offline and show the built prompts",
                  example="kioku demo")
    p.add_argument("--keep", type=Path, default=None, help="write the demo data here instead of a temp folder")

    p = _register(sub, "prompt", cmd_prompt,
                  help="show the prompt built for a message, with every hit and why it fired",
                  example='kioku prompt xiaoyue "昨天我们聊了什么" --user linzhou --now 2026-11-22T20:30')
    p.add_argument("character")
    p.add_argument("message")
    p.add_argument("--now", type=_iso_time, default=None,
                   help="ISO time to answer at (default: now; naive = the character's zone)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    _common(p)

    p = _register(sub, "chat", cmd_chat, help="chat in the terminal against the configured OpenAI-compatible LLM",
                  example="OPENAI_API_KEY=sk-... kioku chat xiaoyue --user me")
    p.add_argument("character")
    p.add_argument("--show", action="store_true", help="print the hits before each reply")
    _common(p)


def _add_upkeep_commands(sub) -> None:
    """check, reindex, status, facts, config: looking after the files, indexes and config."""
    p = _register(sub, "check", cmd_check, help="validate a world-book folder, or a SillyTavern card or lorebook "
                  "file; exits 1 and names file:line (or entry) on errors",
                  example="kioku check data/agents/xiaoyue/data_base\n  kioku check Eldoria.json")
    p.add_argument("folder", type=Path)

    p = _register(sub, "reindex", cmd_reindex, help="delete a character's .cache and rebuild every derived index",
                  example="kioku reindex xiaoyue --dates")
    p.add_argument("character")
    p.add_argument("--dates", action="store_true",
                   help="also resolve every diary turn's dates again by this version's rules (rewrites the turns that change)")
    _common(p, user=False)

    p = _register(sub, "status", cmd_status,
                  help="every store's problems and unfinished background work; exits 1 if any",
                  example="kioku status xiaoyue")
    p.add_argument("character")
    _common(p, user=False)

    p = _register(sub, "facts", cmd_facts, help="list, add, edit or delete a user's core facts",
                  example='kioku facts xiaoyue add 讨厌吃香菜 --user linzhou')
    p.add_argument("character")
    p.add_argument("action", choices=["list", "add", "edit", "delete"])
    p.add_argument("--id", default=None, help="fact id (edit, delete)")
    p.add_argument("text", nargs="*", help="fact text (add, edit)")
    _common(p)

    p = _register(sub, "config", cmd_config,
                  help="print every config key with its default and meaning, or validate a config file",
                  example="kioku config > config.yaml   |   kioku config --check config.yaml")
    p.add_argument("--check", type=Path, default=None, help="validate this file instead (unknown keys, types)")


def _add_serve_command(sub) -> None:
    p = _register(sub, "serve", cmd_serve,
                  help="serve the OpenAI-compatible chat endpoint with memory and the memory API",
                  example="KIOKU_API_TOKEN=secret kioku serve --port 8765")
    p.add_argument("--host", default=None, help="address to bind (default: service.host, 127.0.0.1); "
                   "a non-loopback address needs a token")
    p.add_argument("--port", type=_port, default=None, help="port (default: service.port, 8765)")
    p.add_argument("--workers", type=_positive, default=1,
                   help="worker processes (on one machine the file stores coordinate through lock files)")
    _common(p, user=False)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. User errors (bad arguments, bad files, bad config, unknown ids) print one
    line naming the value and return 2; no traceback escapes for them."""
    argv = list(sys.argv[1:] if argv is None else argv)
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            # The shell passed bytes that are not UTF-8; Python kept them as lone surrogates.
            print(f"kioku: error: argument {os.fsencode(arg)!r} is not valid UTF-8 text", file=sys.stderr)
            return USAGE_ERROR
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # Process-wide settings belong to the entry point, not to library imports (one FAISS thread is
    # faster for single queries on small machines).
    from engine.runtime import configure_threads, raise_open_file_limit

    configure_threads()
    raise_open_file_limit()
    _, handler = COMMANDS[args.command]
    try:
        return handler(args)
    except EngineError as exc:
        print(f"kioku: error: {_one_line(str(exc))}", file=sys.stderr)
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        print(f"kioku: error: {exc.strerror or exc}{where}", file=sys.stderr)
    except KeyboardInterrupt:
        print("kioku: interrupted", file=sys.stderr)
        return 130
    return USAGE_ERROR


def _one_line(message: str) -> str:
    # Multi-problem messages ("invalid configuration:\n  a\n  b") become "...: a; b".
    head, *rest = [part.strip() for part in message.splitlines() if part.strip()] or [""]
    return head + (" " if head.endswith(":") else "; ") + "; ".join(rest) if rest else head


if __name__ == "__main__":
    sys.exit(main())
