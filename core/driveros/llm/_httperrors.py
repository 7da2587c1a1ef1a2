"""Translate HTTP error answers, foreign bodies and transport failures into the driveros
error tree. Every message names what the user can act on: the HTTP status and the provider's
own message, the kind of page a proxy answered with, the host that reset the connection."""

from __future__ import annotations

import http
import json
import os
import re
import socket
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from driveros._errors import (
    AuthError,
    BadRequestError,
    OverloadedError,
    ProviderError,
    RateLimitError,
    ServerError,
    StallError,
    StreamError,
    TransportError,
)

if TYPE_CHECKING:
    import httpx

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


def status_text(status: int) -> str:
    """``"500 Internal Server Error"``; just the number for a code without a known phrase."""
    try:
        return f"{status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def body_kind(content_type: str, head: bytes) -> str | None:
    """What a body that is not an API answer looks like (``"an HTML page"``), or None when
    it may be JSON or an event stream. ``head`` is the first bytes of the body."""
    ctype = content_type.split(";", 1)[0].strip().lower()
    start = head.lstrip()[:64].lower()
    if "html" in ctype or start.startswith((b"<!doctype html", b"<html", b"<head", b"<body")):
        return "an HTML page"
    if "json" in ctype or ctype == "text/event-stream":
        return None
    if start.startswith((b"{", b"[", b"data:", b"event:", b":", b"id:", b"retry:")) or not start:
        return None
    if start.startswith(b"<"):
        return "an XML document"
    return f"a {ctype} body" if ctype else "a body of unknown type"


def page_summary(body: bytes) -> str:
    """A page's title, or its first words without markup: a hint of who answered."""
    text = body[:8192].decode("utf-8", "replace")
    found = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
    if found is None:
        text = re.sub(r"<(script|style)\b.*?</\1\s*>", " ", text, flags=re.I | re.S)
    words = " ".join(re.sub(r"<[^>]*>", " ", found.group(1) if found else text).split())
    return words[:120]


def _with_summary(message: str, body: bytes) -> str:
    summary = page_summary(body)
    return f"{message}: {summary!r}" if summary else message


def foreign_body_error(
    provider: str, status: int, content_type: str, head: bytes, *, kind: str | None = None
) -> StreamError:
    """A 2xx whose body is not an API response (a proxy's or captive portal's page)."""
    what = kind or body_kind(content_type, head) or "a body"
    ctype = content_type.split(";", 1)[0].strip() or "none"
    return StreamError(
        _with_summary(
            f"{provider} answered with {what} (status {status}, content-type {ctype}), "
            "not an API response",
            head,
        ),
        provider=provider,
        status=status,
        content_type=ctype,
        body_head=head[:200].decode("utf-8", "replace"),
    )


def error_from_status(
    provider: str,
    status: int,
    headers: Mapping[str, str],
    body: bytes | str,
) -> ProviderError:
    """The typed error for an HTTP error answer: the status and the provider's own message
    (``"openai: 429 Too Many Requests: Rate limit reached"``)."""
    raw = body.encode() if isinstance(body, str) else body
    foreign = body_kind(headers.get("content-type", ""), raw[:512])
    extra: dict[str, Any]
    if foreign in ("an HTML page", "an XML document"):  # a proxy's page, not the provider's
        message = _with_summary(f"{foreign}, not an API response", raw)
        etype, code, extra = None, None, {}
    else:
        message, etype, code, extra = error_details(_decode(body))
    request_id = headers.get("request-id") or headers.get("x-request-id")
    if request_id and "request_id" not in extra:
        extra["request_id"] = request_id
    ctx: dict[str, Any] = {"provider": provider, "status": status, "type": etype, "code": code}
    ctx.update(extra)
    text = f"{provider}: {status_text(status)}: {message}"
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
    where = f"{status_text(status)}: " if status is not None and status >= 400 else ""
    return StreamError(
        f"{provider}: {where}{message}",
        provider=provider,
        status=status,
        retryable=retryable,
        type=etype,
        code=code,
        **extra,
    )


def _root_causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _os_reason(exc: OSError) -> str | None:
    """``"Connection refused"`` rather than asyncio's ``"Connect call failed (...)"``."""
    if isinstance(exc, socket.gaierror):
        return exc.strerror or None
    return os.strerror(exc.errno) if exc.errno and exc.errno > 0 else None


def _host(exc: httpx.HTTPError) -> str:
    try:
        url = exc.request.url
    except RuntimeError:  # an error raised before a request existed
        return "the provider"
    default = {"http": 80, "https": 443}.get(url.scheme)
    return url.host if url.port in (None, default) else f"{url.host}:{url.port}"


def transport_error(
    provider: str, exc: httpx.HTTPError, *, read_timeout: float | None
) -> TransportError:
    """The typed error for a failed connection or read, worded for a person.

    ``read_timeout`` is the client's read timeout in seconds (for the message of a read
    that timed out). A reset says who reset it; a timeout says how long we waited.
    """
    import httpx

    host = _host(exc)
    kind = type(exc).__name__
    causes = _root_causes(exc)
    ctx: dict[str, Any] = {"provider": provider, "cause": kind, "host": host}
    if any(isinstance(c, ConnectionResetError) for c in causes):
        return TransportError(f"{provider}: connection reset by {host}", **ctx)
    if isinstance(exc, httpx.ReadTimeout):
        waited = f" for {read_timeout:g} s" if read_timeout else ""
        return StallError(
            f"no response from {provider}{waited}",
            after=read_timeout or 0.0,
            phase="read",
            **ctx,
        )
    if isinstance(exc, httpx.ConnectTimeout):
        return TransportError(f"{provider}: cannot connect to {host}: timed out", **ctx)
    if isinstance(exc, httpx.ConnectError):
        reason = (
            next((_os_reason(c) for c in causes if isinstance(c, OSError) and _os_reason(c)), None)
            or str(exc)
            or "connection failed"
        )
        return TransportError(f"{provider}: cannot connect to {host}: {reason}", **ctx)
    if isinstance(exc, httpx.RemoteProtocolError):
        detail = str(exc) or "the connection broke"
        return TransportError(f"{provider}: {host} broke the connection: {detail}", **ctx)
    detail = str(exc) or next((str(c) for c in causes[1:] if str(c)), "") or "no detail"
    return TransportError(f"{provider}: {kind} talking to {host}: {detail}", **ctx)
