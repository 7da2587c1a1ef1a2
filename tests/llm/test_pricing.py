"""Prices from the genai-prices table: cache reads and writes at their own prices; unknown
models are "unknown", never 0."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from driveros.llm import Usage, context_window, format_cost, price_usage


async def test_a_known_model_is_priced_with_cache_reads_and_writes_at_their_own_prices() -> None:
    plain = Usage(input_tokens=10_000, output_tokens=1_000)
    cached = Usage(
        input_tokens=10_000, output_tokens=1_000, cache_read_tokens=8_000, cache_write_tokens=0
    )
    written = Usage(
        input_tokens=10_000, output_tokens=1_000, cache_read_tokens=0, cache_write_tokens=8_000
    )
    p = await price_usage(plain, model="claude-sonnet-4-5", provider="anthropic")
    c = await price_usage(cached, model="claude-sonnet-4-5", provider="anthropic")
    w = await price_usage(written, model="claude-sonnet-4-5", provider="anthropic")
    assert p.cost_usd is not None and c.cost_usd is not None and w.cost_usd is not None
    # $3/M input, $15/M output, reads at a tenth of input, writes at 1.25x input.
    assert p.cost_usd == pytest.approx(10_000 * 3e-6 + 1_000 * 15e-6)
    assert c.cost_usd == pytest.approx(2_000 * 3e-6 + 8_000 * 0.3e-6 + 1_000 * 15e-6)
    assert w.cost_usd == pytest.approx(2_000 * 3e-6 + 8_000 * 3.75e-6 + 1_000 * 15e-6)
    assert c.cost_usd < p.cost_usd < w.cost_usd
    assert format_cost(p) == f"${p.cost_usd:.4f}"


@pytest.mark.parametrize(
    ("model", "provider"),
    [("scripted-model", "openai"), ("no-such-model-xyz", "anthropic"), ("llama3.2", "ollama")],
)
async def test_an_unknown_or_local_model_costs_unknown_never_zero(
    model: str, provider: str
) -> None:
    usage = await price_usage(
        Usage(input_tokens=100, output_tokens=5), model=model, provider=provider
    )
    assert usage.cost_usd is None and usage.cost_unknown
    assert format_cost(usage) == "unknown"


async def test_a_cost_the_provider_reported_is_kept() -> None:
    usage = Usage(input_tokens=100, output_tokens=5, cost_usd=0.5)
    priced = await price_usage(usage, model="anthropic/claude-sonnet-4.5", provider="openrouter")
    assert priced.cost_usd == 0.5


def test_sums_stay_unknown_once_any_part_is_unknown() -> None:
    known = Usage(input_tokens=1, cost_usd=0.25)
    unknown = Usage(input_tokens=1, cost_unknown=True)
    assert (Usage() + known + known).cost_usd == 0.5
    total = Usage() + known + unknown + known
    assert total.cost_usd is None and total.cost_unknown
    assert (
        Usage(input_tokens=10, cache_read_tokens=6, cache_write_tokens=1).uncached_input_tokens == 3
    )


async def test_context_windows_come_from_the_table_or_the_documented_fallback() -> None:
    assert await context_window("claude-sonnet-4-5", "anthropic") == 200_000
    assert await context_window("llama3:8b", "ollama") == 8_192
    assert await context_window("scripted-model", "openai") is None


_usages = st.builds(
    Usage,
    input_tokens=st.integers(0, 10**6),
    cache_read_tokens=st.integers(0, 10**6),
    cost_usd=st.none() | st.floats(0, 100),
    cost_unknown=st.booleans(),
).filter(lambda u: not (u.cost_unknown and u.cost_usd is not None))


@given(st.lists(_usages, max_size=6))
def test_a_sum_is_unknown_exactly_when_a_part_is_and_never_a_silent_zero(
    parts: list[Usage],
) -> None:
    total = sum(parts, Usage())
    unknown = any(p.cost_unknown for p in parts)
    assert total.cost_unknown is unknown
    if unknown:
        assert total.cost_usd is None
    else:
        known = [p.cost_usd for p in parts if p.cost_usd is not None]
        assert total.cost_usd == (pytest.approx(sum(known)) if known else None)
    assert Usage.model_validate_json(total.model_dump_json()) == total
