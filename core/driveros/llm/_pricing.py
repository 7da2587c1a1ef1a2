"""What tokens cost and how much context a model has, from the ``genai-prices`` table.

    usage = await llm.price_usage(response.usage, model="claude-sonnet-4-5", provider="anthropic")
    usage.cost_usd        # dollars, cache reads and writes at their own prices
    usage.cost_unknown    # True when the model is not in the table (cost_usd stays None)

The table ships inside the package (no network): an unknown or local model is "unknown",
never 0. A cost the provider reported itself (OpenRouter's ``usage.cost``) is kept as is.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import warnings
from typing import Any

from driveros.llm._types import Usage

log = logging.getLogger(__name__)

#: driveros provider name -> genai-prices provider id. ``None``: never priced (local models).
_PROVIDER_IDS: dict[str, str | None] = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openrouter": "openrouter",
    "xai": "x-ai",
    "ollama": None,
}

#: Context windows of model families the table may lack (prefix match, longest first).
#: Small local models default to 8k in Ollama unless configured otherwise.
CONTEXT_WINDOWS: dict[str, int] = {
    "claude": 200_000,
    "gpt-4.1": 1_000_000,
    "gpt-4o": 128_000,
    "gpt-5": 400_000,
    "grok-4": 256_000,
    "llama3": 8_192,
    "qwen2.5-coder": 32_768,
}


@functools.cache
def _table() -> Any:
    """The genai-prices module, imported on first use (importing it takes about a second)."""
    import genai_prices

    return genai_prices


def _lookup(model: str, provider: str) -> Any | None:
    """The genai-prices model entry for ``model`` at ``provider``, or None when unknown."""
    if not model or (provider in _PROVIDER_IDS and _PROVIDER_IDS[provider] is None):
        return None
    table = _table()
    provider_id = _PROVIDER_IDS.get(provider)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return table.calc_price(table.Usage(input_tokens=0), model, provider_id=provider_id)
    except Exception as exc:  # the table is foreign code: a failed lookup is "unknown"
        log.debug("no price for %s at %s: %r", model, provider, exc)
        return None


def price_usage_sync(usage: Usage, *, model: str, provider: str) -> Usage:
    """``usage`` with ``cost_usd`` set from the price table, or ``cost_unknown`` when absent.

    Blocking (the first call loads the table): use :func:`price_usage` on the event loop.
    """
    if usage.cost_usd is not None or usage.cost_unknown:
        return usage
    if _lookup(model, provider) is None:
        return usage.model_copy(update={"cost_usd": None, "cost_unknown": True})
    table = _table()
    tokens = table.Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            calc = table.calc_price(tokens, model, provider_id=_PROVIDER_IDS.get(provider))
    except Exception as exc:  # the table is foreign code: a failed price is "unknown"
        log.debug("pricing %s at %s failed: %r", model, provider, exc)
        return usage.model_copy(update={"cost_usd": None, "cost_unknown": True})
    return usage.model_copy(update={"cost_usd": float(calc.total_price)})


async def price_usage(usage: Usage, *, model: str, provider: str) -> Usage:
    """:func:`price_usage_sync` off the event loop."""
    if usage.cost_usd is not None or usage.cost_unknown:
        return usage
    return await asyncio.to_thread(price_usage_sync, usage, model=model, provider=provider)


def context_window_sync(model: str, provider: str) -> int | None:
    """The model's context window in tokens: the price table's, else :data:`CONTEXT_WINDOWS`."""
    entry = _lookup(model, provider)
    window = getattr(getattr(entry, "model", None), "context_window", None)
    if isinstance(window, int) and window > 0:
        return window
    name = model.lower().rsplit("/", 1)[-1]
    for prefix in sorted(CONTEXT_WINDOWS, key=len, reverse=True):
        if name.startswith(prefix):
            return CONTEXT_WINDOWS[prefix]
    return None


async def context_window(model: str, provider: str) -> int | None:
    """:func:`context_window_sync` off the event loop."""
    return await asyncio.to_thread(context_window_sync, model, provider)


def format_cost(usage: Usage) -> str:
    """``$0.0123`` or ``unknown`` (for SUMMARY lines and reports)."""
    if usage.cost_usd is None:
        return "unknown"
    return f"${usage.cost_usd:.4f}"
