"""Fan-out over several providers: ``compare`` (everyone) and ``race`` (first accepted).

``race`` cancels the losers as soon as a response is accepted and waits for them to
finish cancelling, which closes their HTTP streams. A failure never wins a race, however
fast it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from driveros._errors import DriverosError, ProviderError
from driveros.llm._provider import Provider
from driveros.llm._registry import Registry
from driveros.llm._types import Request, Response, Usage

Providers = Mapping[str, Provider] | Registry | Iterable[Provider]


@dataclass(frozen=True, slots=True)
class FanoutResult:
    """One provider's outcome: a response or an error, with the wall time it took."""

    name: str
    response: Response | None
    error: DriverosError | None
    latency_s: float

    @property
    def ok(self) -> bool:
        return self.response is not None

    @property
    def usage(self) -> Usage:
        return self.response.usage if self.response is not None else Usage()


def _named(providers: Providers) -> list[tuple[str, Provider]]:
    if isinstance(providers, Mapping):
        return list(providers.items())
    if isinstance(providers, Registry):
        return [(n, providers.must_get(n)) for n in providers.names()]
    out: list[tuple[str, Provider]] = []
    for provider in providers:
        out.append((provider.name, provider))
    return out


async def _timed(name: str, provider: Provider, req: Request) -> FanoutResult:
    start = time.perf_counter()
    try:
        response = await provider.generate(req)
    except DriverosError as exc:
        return FanoutResult(name, None, exc, time.perf_counter() - start)
    return FanoutResult(name, response, None, time.perf_counter() - start)


async def compare(providers: Providers, req: Request) -> list[FanoutResult]:
    """Send ``req`` to every provider concurrently; every result, in the given order."""
    named = _named(providers)
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(_timed(n, p, req)) for n, p in named]
    return [t.result() for t in tasks]


async def race(
    providers: Providers,
    req: Request,
    *,
    accept: Callable[[Response], bool] | None = None,
) -> FanoutResult:
    """The first response that ``accept`` (default: any) approves; the rest are cancelled.

    Raises :class:`ProviderError` listing every failure when nothing was accepted.
    """
    named = _named(providers)
    if not named:
        raise ProviderError("race: no providers given")
    tasks = [asyncio.create_task(_timed(n, p, req)) for n, p in named]
    rejected: list[FanoutResult] = []
    try:
        for next_done in asyncio.as_completed(tasks):
            result = await next_done
            if result.response is not None and (accept is None or accept(result.response)):
                return result
            rejected.append(result)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    reasons = "; ".join(f"{r.name}: {r.error or 'response not accepted'}" for r in rejected)
    raise ProviderError(f"race: no provider gave an accepted response ({reasons})")
