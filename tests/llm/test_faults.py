"""Retries, timeouts and cancellation against a fault-injecting server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from driveros import llm
from driveros.llm import openaicompat
from tests.llm.faultserver import Fault, FaultServer, error, ok, ok_json, ok_stream

FAST = llm.RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02)
REQ = llm.Request(messages=[llm.user("hi")])


def _provider(
    server: FaultServer, *, http_client: httpx.AsyncClient | None = None, **settings: Any
) -> openaicompat.OpenAICompatProvider:
    settings.setdefault("retry", FAST)
    return openaicompat.OpenAICompatProvider(
        "m",
        base_url=server.url,
        api_key="k",
        http_client=http_client,
        settings=llm.HTTPSettings(**settings),
    )


@contextlib.asynccontextmanager
async def _setup(
    faults: list[Fault], **kw: Any
) -> AsyncIterator[tuple[FaultServer, openaicompat.OpenAICompatProvider]]:
    async with FaultServer(faults) as srv, _provider(srv, **kw) as provider:
        yield srv, provider


async def _collect(provider: llm.Provider) -> list[Any]:
    return [e async for e in provider.stream(REQ)]


async def test_fault_429_retry_after_ms_then_success() -> None:
    async with _setup([error(429, "slow down", **{"retry-after-ms": "20"}), ok_json()]) as (
        srv,
        provider,
    ):
        resp = await provider.generate(REQ)
    assert resp.text() == "Hello"
    assert len(srv.requests) == 2


async def test_fault_429_retry_after_too_long_is_raised_at_once() -> None:
    async with _setup([error(429, "later", **{"retry-after": "120"}), ok_json()]) as (
        srv,
        provider,
    ):
        with pytest.raises(llm.RateLimitError) as err:
            await provider.generate(REQ)
    assert err.value.retry_after == 120.0
    assert err.value.retryable
    assert len(srv.requests) == 1


async def test_fault_spend_cap_429_never_retried() -> None:
    body = json.dumps(
        {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota"}}
    ).encode()
    faults = [Fault(kind="status", status=429, body=body), ok_json()]
    async with FaultServer(faults) as srv, _provider(srv) as provider:
        with pytest.raises(llm.RateLimitError) as err:
            await provider.generate(REQ)
    assert err.value.spend_cap and not err.value.retryable
    assert len(srv.requests) == 1


async def test_fault_529_overloaded_retried_in_stream() -> None:
    async with _setup([error(529, "Overloaded"), ok_stream()]) as (srv, provider):
        events = await _collect(provider)
    assert events[-1].response.text() == "Hello"
    assert len(srv.requests) == 2


async def test_fault_500_retries_are_capped() -> None:
    async with FaultServer([error(500, "boom")]) as srv, _provider(srv) as provider:
        with pytest.raises(llm.ServerError, match="boom"):
            await provider.generate(REQ)
    assert len(srv.requests) == FAST.max_retries + 1


async def test_fault_401_is_auth_error_not_retried() -> None:
    async with FaultServer([error(401, "bad key")]) as srv, _provider(srv) as provider:
        with pytest.raises(llm.AuthError, match="bad key"):
            await provider.generate(REQ)
    assert len(srv.requests) == 1


async def test_fault_connection_reset_is_retried() -> None:
    async with FaultServer([Fault(kind="reset"), ok_json()]) as srv, _provider(srv) as provider:
        resp = await provider.generate(REQ)
    assert resp.text() == "Hello"
    assert len(srv.requests) == 2


async def test_fault_connection_reset_without_retries_is_transport_error() -> None:
    async with _setup([Fault(kind="reset")], retry=llm.RetryPolicy(max_retries=0)) as (
        _srv,
        provider,
    ):
        with pytest.raises(llm.TransportError):
            await provider.generate(REQ)


async def test_fault_truncated_stream_after_output_is_not_retried() -> None:
    half = ok_stream().body.split(b"\n\n")[0] + b"\n\n"
    async with _setup([Fault(kind="truncate", body=half), ok_stream()]) as (srv, provider):
        events: list[Any] = []
        with pytest.raises(llm.StreamError):
            async for event in provider.stream(REQ):
                events.append(event)
    assert events == [llm.TextDelta(text="Hel")]
    assert len(srv.requests) == 1


async def test_fault_truncated_stream_before_output_is_retried() -> None:
    faults = [Fault(kind="truncate", body=b": keep-alive\n\n"), ok_stream()]
    async with FaultServer(faults) as srv, _provider(srv) as provider:
        events = await _collect(provider)
    assert events[-1].response.text() == "Hello"
    assert len(srv.requests) == 2


async def test_fault_stream_without_terminator_is_stream_error() -> None:
    # A complete HTTP body that simply stops: no finish_reason, no [DONE].
    half = ok_stream().body.split(b"\n\n")[0] + b"\n\n"
    fault = Fault(body=half, content_type="text/event-stream")
    async with _setup([fault], retry=llm.RetryPolicy(max_retries=0)) as (_srv, provider):
        with pytest.raises(llm.StreamError, match="before the response was complete"):
            await _collect(provider)


async def test_fault_slow_first_byte_times_out_as_transport_error() -> None:
    async with _setup([Fault(delay=5.0, body=b"{}"), ok_json()], timeout=0.5) as (srv, provider):
        resp = await provider.generate(REQ)
    # The first attempt timed out (TransportError, retryable); the retry answered.
    assert resp.text() == "Hello"
    assert len(srv.requests) == 2


async def test_fault_slow_first_byte_no_retry_raises() -> None:
    async with FaultServer([Fault(delay=5.0, body=b"{}")]) as srv:
        policy = llm.RetryPolicy(max_retries=0)
        async with _provider(srv, timeout=0.5, retry=policy) as provider:
            with pytest.raises(
                llm.StallError, match=r"no response from openai-compatible for 0\.5 s"
            ):
                await provider.generate(REQ)


async def test_cancel_stream_closes_connection_at_once() -> None:
    first = ok_stream().body.split(b"\n\n")[0] + b"\n\n"
    async with FaultServer([Fault(kind="hang", body=first)]) as srv, _provider(srv) as provider:
        got_first = asyncio.Event()

        async def consume() -> None:
            async for _ in provider.stream(REQ):
                got_first.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(got_first.wait(), 5)
        assert srv.open_connections == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(srv.closed.wait(), 5)
        assert srv.open_connections == 0


async def test_cancel_generate_closes_connection_at_once() -> None:
    async with FaultServer([Fault(delay=30.0, body=b"{}")]) as srv, _provider(srv) as provider:
        task = asyncio.create_task(provider.generate(REQ))
        while not srv.requests:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(srv.closed.wait(), 5)
        assert srv.open_connections == 0


async def test_no_connection_leak_over_many_calls() -> None:
    async with FaultServer([ok()]) as srv, _provider(srv) as provider:
        for _ in range(10):
            await _collect(provider)
        for _ in range(5):
            # Abandon streams early; aclose() must release the connection.
            stream = provider.stream(REQ)
            async with contextlib.aclosing(stream):  # type: ignore[type-var]
                async for _ in stream:
                    break
            await asyncio.wait_for(_drained(srv), 5)
        for _ in range(5):
            await provider.generate(REQ)
        # Full reads reuse one keep-alive connection; an abandoned stream closes the one it
        # used: the pooled one, then four fresh ones; the generates share one more.
        assert srv.connections == 1 + 4 + 1
        assert srv.peak_open == 1
    await asyncio.wait_for(_drained(srv), 5)


async def _drained(srv: FaultServer) -> None:
    while srv.open_connections:
        await asyncio.sleep(0.01)


async def test_owned_client_closed_and_passed_client_left_open() -> None:
    async with FaultServer([ok_json()]) as srv:
        provider = _provider(srv)
        await provider.generate(REQ)
        await provider.aclose()
        await asyncio.wait_for(_drained(srv), 5)
        async with httpx.AsyncClient() as client:
            provider = _provider(srv, http_client=client)
            await provider.generate(REQ)
            await provider.aclose()
            assert not client.is_closed


async def test_fault_200_with_error_body_is_typed() -> None:
    body = json.dumps(
        {"error": {"code": 429, "message": "Rate limit exceeded: free tier"}}
    ).encode()
    async with _setup([Fault(body=body)], retry=llm.RetryPolicy(max_retries=0)) as (_srv, provider):
        with pytest.raises(llm.RateLimitError, match="free tier"):
            await provider.generate(REQ)


async def test_fault_200_with_non_json_body_is_stream_error() -> None:
    fault = Fault(body=b"<html>gateway</html>", content_type="text/html")
    async with _setup([fault], retry=llm.RetryPolicy(max_retries=0)) as (_srv, provider):
        with pytest.raises(llm.StreamError) as err:
            await provider.generate(REQ)
    assert str(err.value) == (
        "openai-compatible answered with an HTML page (status 200, content-type text/html), "
        "not an API response: 'gateway'"
    )


async def test_fault_anthropic_overloaded_then_stream() -> None:
    from driveros.llm import anthropic

    sse = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
        b'"model":"m","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}\n\n'
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"text","text":""}}\n\n'
        b'event: ping\ndata: {"type": "ping"}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"hi"}}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
        b'"usage":{"output_tokens":2}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    overloaded = json.dumps(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )
    faults = [
        Fault(kind="status", status=529, body=overloaded.encode(), headers={"retry-after": "0"}),
        Fault(body=sse, content_type="text/event-stream"),
    ]
    async with FaultServer(faults) as srv:
        provider = anthropic.claude("m", api_key="k", base_url=srv.url, retry=FAST)
        events = [e async for e in provider.stream(REQ)]
        await provider.aclose()
    assert isinstance(events[-1], llm.StreamDone)
    assert events[-1].response.text() == "hi"
    assert events[-1].response.usage.output_tokens == 2
    assert len(srv.requests) == 2
    assert srv.requests[1]["headers"]["anthropic-version"] == "2023-06-01"
