"""Retry policy: capped exponential backoff with jitter that honours the provider's hints.

Rules (documented in docs/llm.md):

* only errors marked ``retryable`` are retried (rate limits, overload, 5xx, transport);
* a spend-cap 429 (``RateLimitError.spend_cap``) is never retried;
* a provider's ``retry-after-ms`` / ``retry-after`` wins over the computed backoff; a hint
  longer than ``max_retry_after`` is not worth waiting for, so the error is raised at once;
* streaming calls never retry once any event reached the caller (enforced by the caller of
  :meth:`RetryPolicy.delay_for`).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from driveros._errors import OverloadedError, ProviderError, RateLimitError, StallError

_log = logging.getLogger("driveros.llm.retry")

T = TypeVar("T")


class RetryPolicy(BaseModel):
    """How often and how long to wait. ``max_retries=0`` disables retries."""

    model_config = ConfigDict(frozen=True)

    max_retries: int = Field(default=2, ge=0)
    base_delay: float = Field(default=0.5, ge=0)
    max_delay: float = Field(default=8.0, ge=0)
    #: Provider hints longer than this are not honoured by waiting: the error is raised.
    max_retry_after: float = Field(default=60.0, ge=0)
    #: Fraction of the computed delay that is randomised away (0 = no jitter).
    jitter: float = Field(default=0.25, ge=0, le=1)

    def delay_for(self, attempt: int, error: ProviderError) -> float | None:
        """Seconds to wait before retry number ``attempt`` (1-based), or None: do not retry."""
        if not error.retryable or attempt > self.max_retries:
            return None
        if isinstance(error, RateLimitError) and error.spend_cap:
            return None
        hint: float | None = None
        if isinstance(error, RateLimitError | OverloadedError):
            hint = error.retry_after
        if hint is not None:
            if hint > self.max_retry_after:
                return None
            return max(0.0, hint)
        backoff = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return backoff * (1.0 - self.jitter * random.random())

    async def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Await ``fn()``; on a retryable :class:`ProviderError` wait and try again.

        A stall that ends the retries says how many attempts waited in vain."""
        attempt = 0
        while True:
            try:
                return await fn()
            except ProviderError as exc:
                attempt += 1
                delay = self.delay_for(attempt, exc)
                if delay is None:
                    if isinstance(exc, StallError) and attempt > 1:
                        raise StallError(
                            f"{exc.message} (each of {attempt} attempts)",
                            **{**exc.context, "attempts": attempt, "retryable": False},
                        ) from exc
                    raise
                _log.info("retrying after %.2fs (attempt %d): %s", delay, attempt, exc)
                await asyncio.sleep(delay)


NO_RETRY = RetryPolicy(max_retries=0)
