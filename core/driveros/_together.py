"""Work run side by side: every piece finishes (or is canceled with the caller) before an
error is raised, so no cleanup races a piece still running."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")
U = TypeVar("U")


async def all_of(*work: Awaitable[Any]) -> list[Any]:
    """The results of ``work``, run side by side. Every one finishes (or is canceled with the
    caller) before an error is raised, so no cleanup races one still running; the first error,
    in the order given, is raised as itself."""
    done = await asyncio.gather(*work, return_exceptions=True)
    for result in done:
        if isinstance(result, BaseException):
            raise result
    return done


async def both(first: Awaitable[T], second: Awaitable[U]) -> tuple[T, U]:
    """:func:`all_of` for two, typed."""
    a, b = await all_of(first, second)
    return a, b
