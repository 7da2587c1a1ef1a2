"""The HTTP half shared by every adapter: client ownership, errors, retries, SSE streaming.

An adapter subclasses :class:`HTTPProvider` and supplies three pure pieces kept in their own
modules: the request mapping (``_body``), the response mapping (``_parse``) and a stream
state machine (``_stream_state``) whose ``finish()`` goes through the same response mapping,
so ``StreamDone.response`` equals what ``generate()`` returns for the same wire data.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import math
import os
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol, Self

from driveros._errors import ConfigError, ProviderError, StallError, StreamError, TransportError
from driveros._unicode import printable_data
from driveros.llm._httperrors import (
    body_kind,
    error_from_status,
    foreign_body_error,
    transport_error,
)
from driveros.llm._retry import RetryPolicy
from driveros.llm._settings import DEFAULT_HTTP, HTTPSettings
from driveros.llm._sse import SSEDecoder, SSEvent
from driveros.llm._types import Request, Response, StreamDone, StreamEvent

if TYPE_CHECKING:
    import ssl

    import httpx

_log = logging.getLogger("driveros.llm.http")

#: Connect fast. The read timeout is a backstop: a stream is bounded by the stall timeouts
#: below, and a non-streaming answer only arrives once the model is done, so it may take long.
DEFAULT_TIMEOUT: dict[str, float] = {"connect": 10.0, "read": 600.0, "write": 60.0, "pool": 60.0}
#: Most bytes read from a JSON body answering a stream request (an error or a whole answer).
_MAX_JSON_BODY = 16 * 1024 * 1024
_SSE_STARTS = (b"data:", b"event:", b":", b"id:", b"retry:")


class StreamState(Protocol):
    """Turns SSE events into stream events; ``finish()`` builds the final response."""

    def feed(self, event: SSEvent) -> list[StreamEvent]: ...

    def finish(self) -> Response: ...


def _dumps(body: dict[str, Any]) -> bytes:
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    try:
        return text.encode()
    except UnicodeEncodeError:  # a lone surrogate (argv, a file name): send it escaped
        return json.dumps(printable_data(body), separators=(",", ":"), ensure_ascii=False).encode()


class HTTPProvider(ABC):
    """Base of the HTTP adapters. Owns its ``httpx.AsyncClient`` unless one was passed in."""

    def __init__(
        self,
        *,
        name: str,
        model: str,
        base_url: str,
        http_client: httpx.AsyncClient | None = None,
        settings: HTTPSettings = DEFAULT_HTTP,
    ) -> None:
        self._name = name
        self._model = model
        self._base_url = base_url.rstrip("/")
        self._client = http_client
        self._owns_client = http_client is None
        self._timeout = settings.timeout
        self.first_byte_timeout = _seconds(name, "first_byte_timeout", settings.first_byte_timeout)
        self.idle_timeout = _seconds(name, "idle_timeout", settings.idle_timeout)
        self.retry = settings.retry or RetryPolicy()
        #: Extra headers for every request (each adapter decides how they merge with its own).
        self._extra_headers = dict(settings.headers or {})
        self._client_lock = asyncio.Lock()

    # ------------------------------------------------------------------ adapter hooks

    @abstractmethod
    def _path(self) -> str: ...

    @abstractmethod
    def _headers(self) -> dict[str, str]: ...

    @abstractmethod
    def _body(self, req: Request, *, stream: bool) -> dict[str, Any]: ...

    @abstractmethod
    def _parse(self, data: dict[str, Any]) -> Response: ...

    @abstractmethod
    def _stream_state(self) -> StreamState: ...

    # ------------------------------------------------------------------ public

    @property
    def name(self) -> str:
        return self._name

    @property
    def model(self) -> str:
        return self._model

    @property
    def base_url(self) -> str:
        return self._base_url

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r}, model={self._model!r})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client if this provider created it."""
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None

    async def generate(self, req: Request) -> Response:
        """One non-streaming request, retried per :attr:`retry`."""
        content = _dumps(self._body(req, stream=False))
        return await self.retry.call(lambda: self._generate_once(content))

    def stream(self, req: Request) -> AsyncIterator[StreamEvent]:
        """Stream deltas; the last event is ``StreamDone``. Retries only before output.

        Raises :class:`StallError` when nothing arrives for :attr:`first_byte_timeout`
        seconds after the request was sent, or for :attr:`idle_timeout` seconds later on.
        """
        return self._stream(_dumps(self._body(req, stream=True)))

    # ------------------------------------------------------------------ internals

    async def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            async with self._client_lock:
                if self._client is None:
                    # Building a client loads the CA bundle from disk: keep it off the loop.
                    self._client = await asyncio.to_thread(self._new_client)
                    self._owns_client = True
        return self._client

    def _new_client(self) -> httpx.AsyncClient:
        import httpx

        if self._timeout is not None:
            timeout = httpx.Timeout(self._timeout)
        else:
            t = DEFAULT_TIMEOUT
            # Never let the backstop cut a stream the stall timeouts would still allow.
            read = max(t["read"], self.first_byte_timeout or 0.0, self.idle_timeout or 0.0)
            timeout = httpx.Timeout(t["connect"], read=read, write=t["write"], pool=t["pool"])
        return httpx.AsyncClient(timeout=timeout, verify=_ssl_context())

    def _request_headers(self, *, stream: bool) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream" if stream else "application/json",
        }
        headers.update(self._headers())
        return headers

    async def _generate_once(self, content: bytes) -> Response:
        import httpx

        client = await self._http()
        url = self._base_url + self._path()
        try:
            resp = await client.post(
                url, content=content, headers=self._request_headers(stream=False)
            )
        except httpx.HTTPError as exc:
            raise self._transport_error(client, exc) from exc
        if resp.status_code >= 400:
            raise error_from_status(self._name, resp.status_code, resp.headers, resp.content)
        ctype = resp.headers.get("content-type", "")
        kind = body_kind(ctype, resp.content[:512])
        if kind is not None:
            raise foreign_body_error(self._name, resp.status_code, ctype, resp.content)
        try:
            data = resp.json()
        except ValueError as exc:
            raise foreign_body_error(
                self._name, resp.status_code, ctype, resp.content, kind="a body that is not JSON"
            ) from exc
        if not isinstance(data, dict):
            raise StreamError(
                f"{self._name}: unexpected response {data!r:.200}", provider=self._name
            )
        return self._parse(data)

    def _transport_error(self, client: httpx.AsyncClient, exc: httpx.HTTPError) -> TransportError:
        return transport_error(self._name, exc, read_timeout=client.timeout.read)

    def _stall(self, phase: str, after: float) -> StallError:
        # One wording for both clocks (``phase`` tells them apart): what the user waited for.
        return StallError(
            f"no response from {self._name} for {after:g} s",
            provider=self._name,
            after=after,
            phase=phase,
        )

    async def _within(self, limit: float | None, phase: str, after: float, aw: Any) -> Any:
        """Await ``aw``; a :class:`StallError` when it takes longer than ``limit`` seconds."""
        try:
            async with asyncio.timeout(limit) as scope:
                return await aw
        except TimeoutError:
            if scope.expired():
                raise self._stall(phase, after) from None
            raise

    async def _stream(self, content: bytes) -> AsyncIterator[StreamEvent]:
        # The first-byte timeout bounds the silence of the whole attempt sequence: each attempt
        # waits for its first byte only as long as the earlier ones left of it, so a silent
        # provider ends the call once, never once per retry.
        loop = asyncio.get_running_loop()
        first = self.first_byte_timeout
        silent = 0.0
        attempt = 0
        while True:
            yielded = False
            heard: list[float] = []
            started = loop.time()
            left = None if first is None else max(0.0, first - silent)
            try:
                async for event in self._stream_once(content, left, heard):
                    yielded = True
                    yield event
                return
            except ProviderError as exc:
                attempt += 1
                if isinstance(exc, StallError) and exc.phase == "first_byte" and first:
                    raise self._silent(attempt, first) from exc  # nothing left to wait
                silent += (heard[0] if heard else loop.time()) - started
                delay = None if yielded else self.retry.delay_for(attempt, exc)
                if delay is None or (first is not None and silent >= first):
                    raise
                _log.info("retrying stream after %.2fs (attempt %d): %s", delay, attempt, exc)
                await asyncio.sleep(delay)

    def _silent(self, attempts: int, first: float) -> StallError:
        """The provider sent nothing for the whole first-byte timeout, over ``attempts``."""
        tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
        return StallError(
            f"no response from {self._name} in {tries} over {first:g} s",
            provider=self._name,
            after=first,
            phase="first_byte",
            attempts=attempts,
            retryable=False,
        )

    async def _stream_once(
        self, content: bytes, first: float | None, heard: list[float]
    ) -> AsyncIterator[StreamEvent]:
        """One attempt; ``first``: the seconds it may wait for its first byte. The moment the
        provider was first heard from (headers of an error, else the body's first bytes) is
        appended to ``heard``."""
        import httpx

        client = await self._http()
        url = self._base_url + self._path()
        headers = self._request_headers(stream=True)
        loop = asyncio.get_running_loop()
        idle = self.idle_timeout
        started = loop.time()

        def first_left() -> float | None:
            return None if first is None else max(0.0, first - (loop.time() - started))

        try:
            async with contextlib.AsyncExitStack() as stack:
                opening = client.stream("POST", url, content=content, headers=headers)
                resp = await self._within(
                    first_left(), "first_byte", first or 0.0, stack.enter_async_context(opening)
                )
                if resp.status_code >= 400:
                    heard.append(loop.time())
                    body = await self._within(idle, "idle", idle or 0.0, resp.aread())
                    raise error_from_status(self._name, resp.status_code, resp.headers, body)
                ctype = resp.headers.get("content-type", "")
                chunks = resp.aiter_bytes()
                head = b""
                events = 0
                whole: Response | None = None
                state = self._stream_state()
                decoder = SSEDecoder()
                try:
                    while whole is None:
                        if head:
                            waiting = self._within(idle, "idle", idle or 0.0, anext(chunks, None))
                        else:
                            waiting = self._within(
                                first_left(), "first_byte", first or 0.0, anext(chunks, None)
                            )
                        chunk = await waiting
                        if chunk is None:
                            break
                        if not head:
                            heard.append(loop.time())
                            head = chunk[:512]
                            if body_kind(ctype, head) is not None:
                                raise foreign_body_error(self._name, resp.status_code, ctype, head)
                            if _is_json(ctype, head):
                                whole = await self._json_answer(resp, chunk, chunks, ctype)
                                break
                        for sse in decoder.feed(chunk):
                            events += 1
                            for event in state.feed(sse):
                                yield event
                except httpx.HTTPError as exc:
                    detail = self._transport_error(client, exc).message
                    raise StreamError(
                        f"{detail} (the stream was interrupted)",
                        provider=self._name,
                        retryable=True,
                        cause=type(exc).__name__,
                    ) from exc
                if whole is None:
                    for sse in decoder.flush():
                        events += 1
                        for event in state.feed(sse):
                            yield event
                    if not events and head and not head.lstrip().startswith(_SSE_STARTS):
                        raise foreign_body_error(
                            self._name,
                            resp.status_code,
                            ctype,
                            head,
                            kind="a body that is not an event stream",
                        )
                    whole = state.finish()
        except httpx.HTTPError as exc:
            raise self._transport_error(client, exc) from exc
        yield StreamDone(response=whole)

    async def _json_answer(
        self,
        resp: httpx.Response,
        first: bytes,
        chunks: AsyncIterator[bytes],
        ctype: str,
    ) -> Response:
        """A JSON body answering a stream request: an error envelope, or a whole answer
        from a server that ignored ``stream: true``."""
        idle = self.idle_timeout
        parts = [first]
        size = len(first)
        while size <= _MAX_JSON_BODY:
            chunk = await self._within(idle, "idle", idle or 0.0, anext(chunks, None))
            if chunk is None:
                break
            parts.append(chunk)
            size += len(chunk)
        body = b"".join(parts)
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise foreign_body_error(
                self._name, resp.status_code, ctype, body, kind="a body that is not an API answer"
            )
        return self._parse(data)


#: What the default TLS context depends on (read when it is made: by httpx for the CA bundle,
#: by :mod:`ssl` for the key log).
_TLS_ENV = ("SSL_CERT_FILE", "SSL_CERT_DIR", "SSLKEYLOGFILE")


def _ssl_context() -> ssl.SSLContext:
    """The TLS context every provider's client verifies with: httpx's default one, made once
    per process for the environment above. Made per client it loaded the CA bundle each
    time, 20-25 ms on every run's first request."""
    return _ssl_context_for(tuple(os.environ.get(k) for k in _TLS_ENV))


@functools.lru_cache(maxsize=4)
def _ssl_context_for(_env: tuple[str | None, ...]) -> ssl.SSLContext:
    import httpx

    return httpx.create_ssl_context()


def _is_json(content_type: str, head: bytes) -> bool:
    """A JSON body where an event stream was asked for (some servers answer errors so)."""
    return "json" in content_type.lower() and not head.lstrip().startswith(_SSE_STARTS)


def _seconds(provider: str, name: str, value: float | None) -> float | None:
    if value is None:
        return None
    if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{provider}: {name} must be a positive number of seconds or None")
    return float(value)
