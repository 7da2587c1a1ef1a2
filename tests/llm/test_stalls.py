"""Stalls and foreign answers on the wire: the first-byte and idle timeouts, and messages
that name the HTTP status, the provider's own words, the page that answered, the host that
reset the connection (issue 15, rows 7 and 12)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from driveros import llm
from driveros.config import load_environment
from driveros.llm import anthropic, openaicompat
from tests.llm.faultserver import OPENAI_STREAM, Fault, FaultServer, error, ok_json, ok_stream

REQ = llm.Request(messages=[llm.user("hi")])
NO_RETRY = llm.RetryPolicy(max_retries=0)
FAST = llm.RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02)
FIRST_EVENT = OPENAI_STREAM.split(b"\n\n")[0] + b"\n\n"
HTML = b"<!DOCTYPE html><html><head><title>Sign in to the Wi-Fi</title></head><body>x</body></html>"


@contextlib.asynccontextmanager
async def _openai(
    faults: list[Fault], **kw: Any
) -> AsyncIterator[tuple[FaultServer, openaicompat.OpenAICompatProvider]]:
    kw.setdefault("retry", NO_RETRY)
    async with FaultServer(faults) as srv:
        provider = openaicompat.openai("m", api_key="k", base_url=srv.url, **kw)
        async with provider:
            yield srv, provider


async def _drained(srv: FaultServer) -> None:
    while srv.open_connections:
        await asyncio.sleep(0.01)


# ---------------------------------------------------------------------------------- stalls


async def test_stall_before_headers_ends_with_no_response_message() -> None:
    async with _openai([Fault(kind="stall")], first_byte_timeout=0.3) as (srv, provider):
        with pytest.raises(llm.StallError) as err:
            [e async for e in provider.stream(REQ)]
        # The stalled connection is closed, not left to the 600 s read timeout.
        await asyncio.wait_for(_drained(srv), 5)
    assert str(err.value) == "no response from openai in 1 attempt over 0.3 s"
    assert err.value.phase == "first_byte"
    assert err.value.after == 0.3
    assert isinstance(err.value, llm.TransportError)
    assert not err.value.retryable  # the budget is spent: a caller's retry would wait again
    assert len(srv.requests) == 1


async def test_stall_after_headers_before_any_byte_is_a_first_byte_stall() -> None:
    fault = Fault(kind="hang", body=b"")
    async with _openai([fault], first_byte_timeout=0.3, idle_timeout=30) as (_srv, provider):
        with pytest.raises(llm.StallError, match=r"^no response from openai in 1 attempt") as err:
            [e async for e in provider.stream(REQ)]
    assert err.value.phase == "first_byte"


async def test_stall_before_output_is_not_retried_once_the_first_byte_timeout_is_spent() -> None:
    """A silent provider is waited for once: the first-byte timeout bounds the whole sequence
    of attempts (issue 28 row 7), so the default two retries never start."""
    faults = [Fault(kind="stall"), ok_stream()]
    async with _openai(faults, first_byte_timeout=0.3, retry=llm.RetryPolicy()) as (
        srv,
        provider,
    ):
        assert provider.retry.max_retries == 2  # the default policy would retry other errors
        with pytest.raises(llm.StallError) as err:
            [e async for e in provider.stream(REQ)]
    assert str(err.value) == "no response from openai in 1 attempt over 0.3 s"
    assert err.value.context["attempts"] == 1
    assert len(srv.requests) == 1


async def test_stall_after_quick_failures_names_every_attempt() -> None:
    """Failures that answer at once are retried as before; the stall that follows gets what
    is left of the first-byte timeout, and its message counts every attempt."""
    faults = [Fault(kind="reset"), error(503, "busy"), Fault(kind="stall")]
    async with _openai(faults, first_byte_timeout=0.5, retry=FAST) as (srv, provider):
        with pytest.raises(llm.StallError) as err:
            [e async for e in provider.stream(REQ)]
    assert str(err.value) == "no response from openai in 3 attempts over 0.5 s"
    assert (err.value.phase, err.value.after, err.value.context["attempts"]) == (
        "first_byte",
        0.5,
        3,
    )
    assert len(srv.requests) == 3


async def test_stall_silence_of_an_attempt_that_then_failed_counts_against_the_rest() -> None:
    """An attempt silent for most of the timeout, then reset, leaves the next one only the
    remainder: the retry never starts a fresh first-byte wait."""
    faults = [Fault(kind="reset", delay=0.4), Fault(kind="stall"), ok_stream()]
    async with _openai(faults, first_byte_timeout=0.5, retry=FAST) as (srv, provider):
        with pytest.raises(llm.StallError) as err:
            [e async for e in provider.stream(REQ)]
    assert str(err.value) == "no response from openai in 2 attempts over 0.5 s"
    assert len(srv.requests) == 2  # the third (healthy) answer is never asked for


async def test_generate_stall_after_retries_names_the_attempts() -> None:
    """``generate()`` has only the read timeout (an answer comes when the model is done): a
    silent provider is retried under the normal rules, and the error says how many attempts
    waited in vain."""
    async with _openai([Fault(delay=5.0, body=b"{}")], timeout=0.3, retry=FAST) as (
        srv,
        provider,
    ):
        with pytest.raises(llm.StallError) as err:
            await provider.generate(REQ)
    assert str(err.value) == "no response from openai for 0.3 s (each of 3 attempts)"
    assert (err.value.phase, err.value.context["attempts"], err.value.retryable) == (
        "read",
        3,
        False,
    )
    assert len(srv.requests) == 3


async def test_stall_mid_stream_after_output_is_never_retried() -> None:
    faults = [Fault(kind="hang", body=FIRST_EVENT), ok_stream()]
    async with _openai(faults, idle_timeout=0.3, retry=FAST) as (srv, provider):
        events: list[Any] = []
        with pytest.raises(llm.StallError) as err:
            async for event in provider.stream(REQ):
                events.append(event)
        await asyncio.wait_for(_drained(srv), 5)
    assert events == [llm.TextDelta(text="Hel")]
    assert str(err.value) == "no response from openai for 0.3 s"
    assert err.value.phase == "idle"
    assert len(srv.requests) == 1


async def test_stall_idle_timer_restarts_with_every_byte() -> None:
    # Keep-alive comments arrive more often than the idle timeout for longer than it in total.
    # Wide margins (a gap is a 15th of the timeout) keep this true on a loaded machine.
    parts = [b": keep-alive\n\n"] * 20 + [OPENAI_STREAM]
    fault = Fault(kind="drip", body=b": hello\n\n", parts=parts, delay=0.2)
    async with _openai([fault], first_byte_timeout=5, idle_timeout=3) as (_srv, provider):
        events = [e async for e in provider.stream(REQ)]
    assert events[-1].response.text() == "Hello"


async def test_stall_anthropic_mid_stream() -> None:
    first = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
        b'"model":"m","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}\n\n'
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"text","text":""}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"hi"}}\n\n'
    )
    async with FaultServer([Fault(kind="hang", body=first)]) as srv:
        provider = anthropic.claude("m", api_key="k", base_url=srv.url, idle_timeout=0.3)
        async with provider:
            events: list[Any] = []
            with pytest.raises(llm.StallError, match=r"^no response from anthropic for 0\.3 s"):
                async for event in provider.stream(REQ):
                    events.append(event)
    assert llm.TextDelta(text="hi") in events


async def test_stall_timeouts_none_leave_only_the_read_timeout() -> None:
    fault = Fault(kind="stall")
    async with _openai([fault], first_byte_timeout=None, idle_timeout=None, timeout=0.3) as (
        _srv,
        provider,
    ):
        with pytest.raises(llm.StallError) as err:
            [e async for e in provider.stream(REQ)]
    assert str(err.value) == "no response from openai for 0.3 s"
    assert err.value.phase == "read"


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf])
def test_stall_timeouts_must_be_positive_seconds(bad: float) -> None:
    with pytest.raises(llm.ConfigError, match="first_byte_timeout"):
        openaicompat.openai("m", api_key="k", first_byte_timeout=bad)
    with pytest.raises(llm.ConfigError, match="idle_timeout"):
        anthropic.claude("m", api_key="k", idle_timeout=bad)


def test_stall_timeouts_default_to_a_minute_and_are_set_per_provider(tmp_path: Path) -> None:
    default = openaicompat.xai(api_key="k")
    assert (default.first_byte_timeout, default.idle_timeout) == (60.0, 60.0)
    presets = [
        openaicompat.openai(api_key="k", first_byte_timeout=5, idle_timeout=7),
        openaicompat.openrouter(api_key="k", first_byte_timeout=5, idle_timeout=7),
        openaicompat.ollama(first_byte_timeout=5, idle_timeout=7),
        anthropic.claude(api_key="k", first_byte_timeout=5, idle_timeout=7),
    ]
    env = load_environment(cwd=tmp_path, environ={"OPENAI_API_KEY": "k"})
    presets.append(llm.provider_from_env("openai", env, first_byte_timeout=5, idle_timeout=7))
    settings = llm.HTTPSettings(first_byte_timeout=5, idle_timeout=7)
    presets += [
        openaicompat.OpenAICompatProvider("m", base_url="http://x.test", settings=settings),
        anthropic.AnthropicProvider("m", api_key="k", settings=settings),
    ]
    for provider in presets:
        assert (provider.first_byte_timeout, provider.idle_timeout) == (5.0, 7.0), provider


# -------------------------------------------------------------------------------- messages


async def test_message_500_names_status_and_provider_message() -> None:
    async with _openai([error(500, "The server had an error processing your request")]) as (
        _srv,
        provider,
    ):
        with pytest.raises(llm.ServerError) as err:
            [e async for e in provider.stream(REQ)]
    assert str(err.value) == (
        "openai: 500 Internal Server Error: The server had an error processing your request"
    )
    assert err.value.status == 500


async def test_message_openai_error_message_on_generate() -> None:
    body = json.dumps(
        {
            "error": {
                "message": "The model `gpt-9` does not exist or you do not have access to it.",
                "type": "invalid_request_error",
                "param": None,
                "code": "model_not_found",
            }
        }
    ).encode()
    async with _openai([Fault(kind="status", status=404, body=body)]) as (_srv, provider):
        with pytest.raises(llm.BadRequestError) as err:
            await provider.generate(REQ)
    assert str(err.value) == (
        "openai: 404 Not Found: The model `gpt-9` does not exist or you do not have access to it."
    )


async def test_message_anthropic_error_message_in_stream() -> None:
    body = json.dumps(
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "max_tokens: field required"},
        }
    ).encode()
    async with FaultServer([Fault(kind="status", status=400, body=body)]) as srv:
        provider = anthropic.claude("m", api_key="k", base_url=srv.url, retry=NO_RETRY)
        async with provider:
            with pytest.raises(llm.BadRequestError) as err:
                [e async for e in provider.stream(REQ)]
    assert str(err.value) == "anthropic: 400 Bad Request: max_tokens: field required"


async def test_message_html_200_in_stream_says_so() -> None:
    fault = Fault(body=HTML, content_type="text/html; charset=utf-8")
    async with _openai([fault]) as (_srv, provider):
        with pytest.raises(llm.StreamError) as err:
            [e async for e in provider.stream(REQ)]
    assert str(err.value) == (
        "openai answered with an HTML page (status 200, content-type text/html), "
        "not an API response: 'Sign in to the Wi-Fi'"
    )
    assert not err.value.retryable


async def test_message_html_page_labelled_event_stream_says_so() -> None:
    fault = Fault(body=HTML, content_type="text/event-stream")
    async with _openai([fault]) as (_srv, provider):
        with pytest.raises(llm.StreamError, match=r"answered with an HTML page \(status 200"):
            [e async for e in provider.stream(REQ)]


async def test_message_plain_text_200_in_stream_says_so() -> None:
    fault = Fault(body=b"Service temporarily paused", content_type="text/plain")
    async with _openai([fault]) as (_srv, provider):
        with pytest.raises(llm.StreamError) as err:
            [e async for e in provider.stream(REQ)]
    assert str(err.value).startswith(
        "openai answered with a text/plain body (status 200, content-type text/plain), "
        "not an API response"
    )


async def test_message_json_error_answering_a_stream_request_is_typed() -> None:
    body = json.dumps({"error": {"code": 429, "message": "Rate limit exceeded: free tier"}})
    async with _openai([Fault(body=body.encode())]) as (_srv, provider):
        with pytest.raises(llm.RateLimitError, match="free tier"):
            [e async for e in provider.stream(REQ)]


async def test_message_json_answer_to_a_stream_request_is_used() -> None:
    # A server that ignores ``stream: true`` and answers whole.
    async with _openai([ok_json()]) as (_srv, provider):
        events = [e async for e in provider.stream(REQ)]
    assert events[-1].response.text() == "Hello"


async def test_message_truncated_event_stream_still_says_incomplete() -> None:
    fault = Fault(body=FIRST_EVENT, content_type="text/event-stream")
    async with _openai([fault]) as (_srv, provider):
        with pytest.raises(llm.StreamError, match="before the response was complete"):
            [e async for e in provider.stream(REQ)]


@pytest.mark.parametrize("streaming", [True, False])
async def test_message_connection_reset_names_the_host(streaming: bool) -> None:
    async with _openai([Fault(kind="reset")]) as (srv, provider):
        host = srv.url.removeprefix("http://")
        with pytest.raises(llm.TransportError) as err:
            if streaming:
                [e async for e in provider.stream(REQ)]
            else:
                await provider.generate(REQ)
    assert str(err.value) == f"openai: connection reset by {host}"
    assert err.value.retryable


async def test_message_connection_reset_mid_stream_names_the_host() -> None:
    fault = Fault(kind="reset_after", body=FIRST_EVENT)
    async with _openai([fault], retry=FAST) as (srv, provider):
        host = srv.url.removeprefix("http://")
        events: list[Any] = []
        with pytest.raises(llm.StreamError) as err:
            async for event in provider.stream(REQ):
                events.append(event)
    assert events == [llm.TextDelta(text="Hel")]
    assert str(err.value) == f"openai: connection reset by {host} (the stream was interrupted)"
    assert len(srv.requests) == 1


async def test_message_connection_refused_names_the_host() -> None:
    async with FaultServer([ok_json()]) as srv:
        url = srv.url
    provider = openaicompat.openai("m", api_key="k", base_url=url, retry=NO_RETRY)
    async with provider:
        with pytest.raises(llm.TransportError) as err:
            await provider.generate(REQ)
    assert str(err.value).startswith(f"openai: cannot connect to {url.removeprefix('http://')}:")
    assert "ConnectError" not in str(err.value)


async def test_message_error_event_inside_a_200_stream_names_its_status() -> None:
    body = (
        b'data: {"error":{"code":502,"message":"Provider returned error",'
        b'"metadata":{"provider_name":"Upstream"}}}\n\n'
    )
    async with _openai([Fault(body=body, content_type="text/event-stream")]) as (_srv, provider):
        with pytest.raises(llm.StreamError) as err:
            [e async for e in provider.stream(REQ)]
    assert str(err.value) == "openai: 502 Bad Gateway: Provider returned error"
    assert err.value.status == 502 and err.value.retryable
