"""`kioku mcp`: the MCP server over stdio, for desktop assistants and agent frameworks that start
their tools as processes.

    kioku mcp --character xiaoyue --user linzhou              # read-only
    kioku mcp --character xiaoyue --user linzhou --allow-edit # facts may be added, corrected, forgotten

A stdio server is its own configuration: its user is `--user`, and a tool naming another user is
refused. Changes need `--allow-edit` or `service.allow_edit: true` in the config. Nothing but the
protocol goes to stdout; logging goes to stderr. On exit (the client closes stdin) the background
memory work is drained.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.config import EngineConfig

EXAMPLE = "kioku mcp --character xiaoyue --user linzhou --allow-edit"


def add_parser(sub: Any, command: Any, common: Any) -> tuple[argparse.ArgumentParser, Any]:
    """Register `kioku mcp` (`command` is cli's `_command`, `common` its `_common`)."""
    p = command(sub, "mcp", help="serve a character's memory to an MCP client (desktop assistant, agent) over stdio",
                example=EXAMPLE)
    p.add_argument("--character", default=None,
                   help="the character (default: service.default_character, else the only one in the data folder)")
    p.add_argument("--allow-edit", action="store_true",
                   help="let the client add, correct and forget facts (default: service.allow_edit)")
    common(p)
    return p, run


def run(args: argparse.Namespace) -> int:
    from importlib.util import find_spec

    from engine.config import open_config
    from engine.errors import ConfigError

    if find_spec("mcp") is None:
        raise ConfigError("kioku mcp needs the official MCP SDK of the service extra: "
                          "pip install 'kioku[service]' (or bash scripts/setup.sh --dev)")
    config = open_config(path=args.config, data_dir=args.data_dir)
    serve_stdio(config, character=args.character, user=args.user,
                allow_edit=args.allow_edit or config.service.allow_edit)
    return 0


def serve_stdio(config: EngineConfig, *, character: str | None, user: str, allow_edit: bool) -> None:
    """Answer MCP over this process's stdin and stdout until the client closes them."""
    from engine.mcp.access import Caller, MemoryAccess
    from engine.mcp.server import build_server
    from engine.paths import validate_id
    from engine.service.app import Registry

    validate_id(user, kind="user id")
    registry = Registry(config)
    caller = Caller(user)
    access = MemoryAccess(registry, caller=lambda _context: caller, allow_edit=allow_edit,
                          default_character=character or config.service.default_character, data_dir=config.data_dir)
    if character is not None:
        access.character(character)  # an unknown character stops the start, naming it
    server = build_server(access)
    try:
        server.run("stdio")
    finally:
        registry.close()
