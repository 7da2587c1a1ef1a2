"""Translate HTTP error answers and error payloads into the driveros error tree."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any

from driveros._errors import (
    AuthError,
    BadRequestError,
    OverloadedError,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamError,
    TransportError,
)

_SPEND_CAP_MARKERS = (
    "insufficient_quota",
    "current quota",
    "credit",
    "billing",
    "spend limit",
    "spending limit",
    "payment required",
)


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (preferred) or ``retry-after`` (secs or date)."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _decode(body: bytes | str) -> Any:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        return json.loads(text)
    except ValueError:
        return text


def error_details(payload: Any) -> tuple[str, str | None, str | None, dict[str, Any]]:
    """``(message, type, code, extra)`` from any known error envelope (or plain text)."""
    if isinstance(payload, dict):
        err = payload.get("error", payload)
        if isinstance(err, str):
            return err, None, None, {}
        if isinstance(err, dict):
            message = str(err.get("message") or err.get("detail") or json.dumps(err))
            etype = err.get("type")
            code = err.get("code")
            extra: dict[str, Any] = {}
            metadata = err.get("metadata")
            if isinstance(metadata, dict) and metadata.get("raw"):
                # OpenRouter wraps the upstream provider's own message here.
                extra["upstream"] = str(metadata["raw"])[:2000]
                if metadata.get("provider_name"):
                    extra["upstream_provider"] = metadata["provider_name"]
            if payload.get("request_id"):
                extra["request_id"] = payload["request_id"]
            return (
                message,
                str(etype) if etype is not None else None,
                str(code) if code is not None else None,
                extra,
            )
    text = str(payload).strip()
    return (text[:2000] or "empty error body"), None, None, {}


def _is_spend_cap(message: str, etype: str | None, code: str | None) -> bool:
    haystack = " ".join(x for x in (message, etype or "", code or "") if x).lower()
    return any(marker in haystack for marker in _SPEND_CAP_MARKERS)


def error_from_status(
    provider: str,
    status: int,
    headers: Mapping[str, str],
    body: bytes | str,
) -> ProviderError:
    """The typed error for an HTTP error answer; the message is the provider's own."""
    message, etype, code, extra = error_details(_decode(body))
    request_id = headers.get("request-id") or headers.get("x-request-id")
    if request_id and "request_id" not in extra:
        extra["request_id"] = request_id
    ctx: dict[str, Any] = {"provider": provider, "status": status, "type": etype, "code": code}
    ctx.update(extra)
    text = f"{provider}: {message}"
    retry_after = parse_retry_after(headers)
    if status in (401, 403):
        return AuthError(text, **ctx)
    if status == 402 or (status == 429 and _is_spend_cap(message, etype, code)):
        return RateLimitError(text, retry_after=retry_after, spend_cap=True, **ctx)
    if status == 429:
        return RateLimitError(text, retry_after=retry_after, **ctx)
    if status in (503, 529) or etype == "overloaded_error":
        return OverloadedError(text, retry_after=retry_after, **ctx)
    if status == 408:
        return TransportError(text, **ctx)
    if status >= 500:
        return ServerError(text, **ctx)
    return BadRequestError(text, **ctx)


def error_from_event(provider: str, payload: Any) -> StreamError:
    """An error reported inside a 200 stream (``event: error`` or an ``error`` object)."""
    message, etype, code, extra = error_details(payload)
    status: int | None = None
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        raw_status = payload["error"].get("status_code", payload["error"].get("code"))
        if isinstance(raw_status, int):
            status = raw_status
    # Overload/5xx reported before any output may be retried; the retry layer never
    # retries once output reached the caller.
    retryable = etype in ("overloaded_error", "api_error") or (
        status is not None and (status >= 500 or status == 429)
    )
    return StreamError(
        f"{provider}: {message}",
        provider=provider,
        status=status,
        retryable=retryable,
        type=etype,
        code=code,
        **extra,
    )
