"""kioku as a Model Context Protocol server: any agent or desktop assistant can search, recall and
correct a character's memory (`kioku mcp` over stdio; `/mcp` in `kioku serve`).

    from engine.mcp import Caller, MemoryAccess, build_server
    server = build_server(MemoryAccess(registry, caller=lambda ctx: Caller("linzhou")))

`access.py` decides whose memory a call reaches, `server.py` holds the tools, resources and prompt,
`results.py` renders the admin API's typed results, `http.py` and `stdio.py` are the transports.
Needs the `service` extra (the official `mcp` SDK); the names below load it on first use, so
`kioku --help` does not.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ArgumentError", "Caller", "MemoryAccess", "ReadOnlyError", "build_server"]


def __getattr__(name: str) -> Any:
    if name == "build_server":
        from engine.mcp.server import build_server

        return build_server
    if name in __all__:
        from engine.mcp import access

        return getattr(access, name)
    raise AttributeError(f"module 'engine.mcp' has no attribute {name!r}")
