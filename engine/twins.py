"""Async twins of sync methods: the sync method is the implementation, its twin runs it in a thread."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def in_thread(method: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Any, P], Awaitable[R]]:
    """`abuild_prompt = in_thread(build_prompt)`: the same signature and docstring, awaitable."""

    @functools.wraps(method)
    async def run(self: Any, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(method, self, *args, **kwargs)

    return run
