"""HTTP error mapping, retry-after parsing and the retry policy."""

from __future__ import annotations

import json
from email.utils import formatdate
from time import time

import pytest

from driveros import llm
from driveros.llm._httperrors import error_from_event, error_from_status, parse_retry_after


def _body(message: str, **err: object) -> bytes:
    return json.dumps({"error": {"message": message, **err}}).encode()


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (400, llm.BadRequestError, False),
        (401, llm.AuthError, False),
        (403, llm.AuthError, False),
        (404, llm.BadRequestError, False),
        (408, llm.TransportError, True),
        (422, llm.BadRequestError, False),
        (429, llm.RateLimitError, True),
        (500, llm.ServerError, True),
        (502, llm.ServerError, True),
        (503, llm.OverloadedError, True),
        (529, llm.OverloadedError, True),
    ],
)
def test_error_from_status_maps_by_cause(
    status: int, kind: type[llm.ProviderError], retryable: bool
) -> None:
    err = error_from_status("p", status, {}, _body("the provider says no"))
    assert type(err) is kind
    assert err.retryable is retryable
    assert err.status == status
    # The status (with its phrase, or the bare number for 529) and the provider's words.
    assert str(err).startswith(f"p: {status}")
    assert str(err).endswith(": the provider says no")


@pytest.mark.parametrize(
    "body",
    [
        _body("You exceeded your current quota", type="insufficient_quota"),
        _body("Your credit balance is too low"),
        _body("workspace spend limit reached", type="rate_limit_error"),
    ],
)
def test_spend_cap_429_is_not_retryable(body: bytes) -> None:
    err = error_from_status("p", 429, {"retry-after": "3"}, body)
    assert isinstance(err, llm.RateLimitError)
    assert err.spend_cap and not err.retryable
    assert llm.RetryPolicy().delay_for(1, err) is None


def test_openrouter_402_is_a_spend_cap() -> None:
    err = error_from_status("openrouter", 402, {}, _body("Insufficient credits", code=402))
    assert isinstance(err, llm.RateLimitError) and err.spend_cap


def test_plain_text_error_body_is_kept() -> None:
    err = error_from_status("p", 502, {}, b"<html>Bad gateway</html>")
    assert "Bad gateway" in str(err)


def test_retry_after_parsing() -> None:
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    when = parse_retry_after({"retry-after": formatdate(time() + 30, usegmt=True)})
    assert when is not None and 20 < when <= 30


def test_error_event_retryable_only_for_overload() -> None:
    overloaded = error_from_event(
        "a", {"type": "error", "error": {"type": "overloaded_error", "message": "x"}}
    )
    invalid = error_from_event("a", {"error": {"type": "invalid_request_error", "message": "y"}})
    assert isinstance(overloaded, llm.StreamError) and overloaded.retryable
    assert not invalid.retryable


def test_retry_policy_backoff_is_capped_and_jittered() -> None:
    policy = llm.RetryPolicy(max_retries=10, base_delay=1.0, max_delay=4.0, jitter=0.5)
    err = llm.ServerError("boom")
    delays = [policy.delay_for(n, err) for n in range(1, 8)]
    assert all(d is not None for d in delays)
    assert all(0.5 <= d <= 4.0 for d in delays if d is not None)
    assert delays[0] is not None and delays[0] <= 1.0
    assert policy.delay_for(11, err) is None
    assert policy.delay_for(1, llm.BadRequestError("no")) is None


def test_retry_policy_honours_provider_hint() -> None:
    policy = llm.RetryPolicy(max_retry_after=10)
    assert policy.delay_for(1, llm.RateLimitError("x", retry_after=2.5)) == 2.5
    assert policy.delay_for(1, llm.OverloadedError("x", retry_after=0.25)) == 0.25
    assert policy.delay_for(1, llm.RateLimitError("x", retry_after=60)) is None
