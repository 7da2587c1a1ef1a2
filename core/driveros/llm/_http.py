"""The HTTP half shared by every adapter: client ownership, errors, retries, SSE streaming.

An adapter subclasses :class:`HTTPProvider` and supplies three pure pieces kept in their own
modules: the request mapping (``_body``), the response mapping (``_parse``) and a stream
state machine (``_stream_state``) whose ``finish()`` goes through the same response mapping,
so ``StreamDone.response`` equals what ``generate()`` returns for the same wire data.
"""

from __future__ import annotations

import asyncio
import json
import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol, Self

from driveros._errors import ProviderError, StreamError, TransportError
from driveros.llm._httperrors import error_from_status
from driveros.llm._retry import RetryPolicy
from driveros.llm._sse import SSEDecoder, SSEvent
from driveros.llm._types import Request, Response, StreamDone, StreamEvent

if TYPE_CHECKING:
    import httpx

_log = logging.getLogger("driveros.llm.http")

#: Connect fast, but let a model think for a long time between bytes.
DEFAULT_TIMEOUT: dict[str, float] = {"connect": 10.0, "read": 600.0, "write": 60.0, "pool": 60.0}


class StreamState(Protocol):
    """Turns SSE events into stream events; ``finish()`` builds the final response."""

    def feed(self, event: SSEvent) -> list[StreamEvent]: ...

    def finish(self) -> Response: ...


def _dumps(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


class HTTPProvider(ABC):
    """Base of the HTTP adapters. Owns its ``httpx.AsyncClient`` unless one was passed in."""

    def __init__(
        self,
        *,
        name: str,
        model: str,
        base_url: str,
        http_client: httpx.AsyncClient | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self._name = name
        self._model = model
        self._base_url = base_url.rstrip("/")
        self._client = http_client
        self._owns_client = http_client is None
        self._timeout = timeout
        self.retry = retry or RetryPolicy()
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
        """Stream deltas; the last event is ``StreamDone``. Retries only before output."""
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
            timeout = httpx.Timeout(t["connect"], read=t["read"], write=t["write"], pool=t["pool"])
        return httpx.AsyncClient(timeout=timeout)

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
            raise self._transport_error(exc) from exc
        if resp.status_code >= 400:
            raise error_from_status(self._name, resp.status_code, resp.headers, resp.content)
        try:
            data = resp.json()
        except ValueError as exc:
            raise StreamError(
                f"{self._name}: response is not JSON: {resp.text[:200]!r}",
                provider=self._name,
                status=resp.status_code,
            ) from exc
        if not isinstance(data, dict):
            raise StreamError(
                f"{self._name}: unexpected response {data!r:.200}", provider=self._name
            )
        return self._parse(data)

    def _transport_error(self, exc: Exception) -> TransportError:
        kind = type(exc).__name__
        detail = str(exc) or kind
        return TransportError(f"{self._name}: {kind}: {detail}", provider=self._name, cause=kind)

    async def _stream(self, content: bytes) -> AsyncIterator[StreamEvent]:
        attempt = 0
        while True:
            yielded = False
            try:
                async for event in self._stream_once(content):
                    yielded = True
                    yield event
                return
            except ProviderError as exc:
                attempt += 1
                delay = None if yielded else self.retry.delay_for(attempt, exc)
                if delay is None:
                    raise
                _log.info("retrying stream after %.2fs (attempt %d): %s", delay, attempt, exc)
                await asyncio.sleep(delay)

    async def _stream_once(self, content: bytes) -> AsyncIterator[StreamEvent]:
        import httpx

        client = await self._http()
        url = self._base_url + self._path()
        headers = self._request_headers(stream=True)
        try:
            async with client.stream("POST", url, content=content, headers=headers) as resp:
                if resp.status_code >= 400:
                    body = await resp.aread()
                    raise error_from_status(self._name, resp.status_code, resp.headers, body)
                state = self._stream_state()
                decoder = SSEDecoder()
                try:
                    async for chunk in resp.aiter_bytes():
                        for sse in decoder.feed(chunk):
                            for event in state.feed(sse):
                                yield event
                except httpx.HTTPError as exc:
                    raise StreamError(
                        f"{self._name}: stream interrupted: {type(exc).__name__}: {exc}",
                        provider=self._name,
                        retryable=True,
                    ) from exc
                for sse in decoder.flush():
                    for event in state.feed(sse):
                        yield event
                response = state.finish()
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from exc
        yield StreamDone(response=response)
