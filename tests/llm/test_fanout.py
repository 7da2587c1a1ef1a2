"""compare() and race() over real providers talking to loopback servers."""

from __future__ import annotations

import asyncio

import pytest

from driveros import llm
from driveros.llm import openaicompat
from driveros.testing import ScriptedError, ScriptedModelServer, Turn
from tests.llm.faultserver import Fault, FaultServer

REQ = llm.Request(messages=[llm.user("ready?")])


def _openai(url: str, name: str) -> openaicompat.OpenAICompatProvider:
    return openaicompat.OpenAICompatProvider(
        "m",
        name=name,
        base_url=url,
        api_key="k",
        settings=llm.HTTPSettings(retry=llm.RetryPolicy(max_retries=0)),
    )


async def test_compare_returns_every_result() -> None:
    async with (
        ScriptedModelServer([Turn(text="fine")]) as good,
        ScriptedModelServer([Turn(error=ScriptedError(status=401, message="bad key"))]) as bad,
    ):
        providers = {
            "good": _openai(good.openai_base_url, "good"),
            "bad": _openai(bad.openai_base_url, "bad"),
        }
        results = await llm.compare(providers, REQ)
        for p in providers.values():
            await p.aclose()
    assert [r.name for r in results] == ["good", "bad"]
    ok, failed = results
    assert ok.ok and ok.response is not None and ok.response.text() == "fine"
    assert ok.usage.total_tokens > 0 and ok.latency_s > 0 and ok.error is None
    assert not failed.ok and isinstance(failed.error, llm.AuthError)
    assert failed.usage == llm.Usage() and failed.latency_s > 0


async def test_race_fast_failure_never_wins_and_losers_are_closed() -> None:
    async with (
        ScriptedModelServer([Turn(error=ScriptedError(status=500))]) as failing,
        ScriptedModelServer([Turn(text="winner", delay_s=0.5)]) as slow_ok,
        FaultServer([Fault(delay=30.0, body=b"{}")]) as hanging,
    ):
        providers = [
            _openai(failing.openai_base_url, "failing"),
            _openai(slow_ok.openai_base_url, "slow_ok"),
            _openai(hanging.url, "hanging"),
        ]
        result = await llm.race(providers, REQ)
        assert result.name == "slow_ok"
        assert len(hanging.requests) == 1  # the loser was mid-request when it lost
        assert result.response is not None and result.response.text() == "winner"
        # The loser was cancelled and its connection closed.
        await asyncio.wait_for(hanging.closed.wait(), 5)
        assert hanging.open_connections == 0
        for p in providers:
            await p.aclose()


async def test_race_accept_filters_responses() -> None:
    async with (
        ScriptedModelServer([Turn(text="no")]) as fast,
        ScriptedModelServer([Turn(text="yes", delay_s=0.05)]) as slow,
    ):
        reg = llm.Registry()
        reg.add("fast", _openai(fast.openai_base_url, "fast"))
        reg.add("slow", _openai(slow.openai_base_url, "slow"))
        result = await llm.race(reg, REQ, accept=lambda r: r.text() == "yes")
        await reg.aclose()
    assert result.name == "slow"


async def test_race_raises_when_nothing_is_accepted() -> None:
    async with (
        ScriptedModelServer([Turn(error=ScriptedError(status=400, message="bad"))]) as a,
        ScriptedModelServer([Turn(text="no")]) as b,
    ):
        providers = {"a": _openai(a.openai_base_url, "a"), "b": _openai(b.openai_base_url, "b")}
        with pytest.raises(llm.ProviderError, match="no provider gave an accepted response") as err:
            await llm.race(providers, REQ, accept=lambda r: False)
        for p in providers.values():
            await p.aclose()
    assert "a: " in str(err.value) and "b: response not accepted" in str(err.value)
