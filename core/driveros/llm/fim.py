"""Fill-in-the-middle completions: the text that belongs between a prefix and a suffix.

    from driveros.llm import fim
    provider = fim.fim_from_env("ollama", env, model="qwen2.5-coder:1.5b")
    async for piece in provider.stream(fim.FimRequest(prefix="def add(a, b):\\n    ", suffix="")):
        ...

Three wire shapes, one protocol (:class:`FimProvider`):

- ``completions``: the OpenAI-compatible ``/v1/completions`` endpoint with ``prompt`` and
  ``suffix`` (Ollama, llama.cpp's server, vLLM);
- ``mistral``: Mistral's ``/v1/fim/completions`` (Codestral);
- ``chat``: any chat provider of :mod:`driveros.llm`, with a prompt built for infill (the
  fallback for endpoints without FIM: Anthropic, OpenAI's hosted models, OpenRouter, xAI).

Cancelling the task that iterates :meth:`FimProvider.stream` closes the HTTP stream at once:
the endpoint sees the connection go and stops generating.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from driveros._errors import ConfigError, StallError, StreamError
from driveros.config import KEY_VARS, MODEL_VARS, URL_VARS
from driveros.llm._httperrors import error_from_event, error_from_status, transport_error
from driveros.llm._sse import SSEDecoder
from driveros.llm._types import Request, TextDelta, system, user

if TYPE_CHECKING:
    import httpx

    from driveros.config import Environment
    from driveros.llm._provider import Provider

__all__ = [
    "DEFAULT_FIM_MODELS",
    "ChatFim",
    "CompletionsFim",
    "FimApi",
    "FimProvider",
    "FimRequest",
    "Snippet",
    "chat_infill_request",
    "choose_api",
    "fim_from_env",
    "fim_prompt",
]

FimApi = Literal["auto", "completions", "mistral", "chat"]

#: A code model that has FIM, for endpoints where the configured model may be a chat model.
DEFAULT_FIM_MODELS: dict[str, str] = {"ollama": "qwen2.5-coder:1.5b"}
_MISTRAL_HOSTS = ("api.mistral.ai", "codestral.mistral.ai")
#: Comment leaders by LSP language id (the header of a FIM prompt is a comment).
_HASH = {"python", "shellscript", "ruby", "perl", "r", "yaml", "toml", "dockerfile", "makefile"}
_DASH = {"lua", "sql", "haskell", "ada"}


class Snippet(BaseModel):
    """Text from another file that may help the model (a neighbouring tab, a recent edit)."""

    model_config = ConfigDict(frozen=True)

    path: str
    text: str


class FimRequest(BaseModel):
    """One completion: the text before and after the cursor, and what surrounds it."""

    model_config = ConfigDict(frozen=True)

    prefix: str
    suffix: str = ""
    path: str | None = None
    language: str | None = None
    snippets: tuple[Snippet, ...] = ()
    max_tokens: int = Field(default=128, ge=1, le=8192)
    stop: tuple[str, ...] = ()
    temperature: float = 0.0


@runtime_checkable
class FimProvider(Protocol):
    """An endpoint that fills the middle. ``stream`` yields text pieces as they arrive."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def api(self) -> str: ...

    def stream(self, req: FimRequest) -> AsyncIterator[str]: ...

    async def complete(self, req: FimRequest) -> str: ...

    async def aclose(self) -> None: ...


def _comment(language: str | None) -> str:
    if language in _HASH:
        return "#"
    if language in _DASH:
        return "--"
    return "//"


def fim_prompt(req: FimRequest) -> str:
    """The ``prompt`` of a FIM request: a comment header (each snippet with its path, then the
    file's own path), then the prefix."""
    lead = _comment(req.language)
    lines: list[str] = []
    for snippet in req.snippets:
        lines.append(f"{lead} Path: {snippet.path}")
        lines.extend(f"{lead} {line}".rstrip() for line in snippet.text.splitlines())
    if req.path:
        lines.append(f"{lead} Path: {req.path}")
    header = "\n".join(lines)
    return f"{header}\n{req.prefix}" if header else req.prefix


_CURSOR = "<|CURSOR|>"
_INFILL_SYSTEM = (
    "You are a code completion engine. The user shows a file with the marker "
    f"{_CURSOR} where the cursor is. Answer with exactly the text to insert at the marker: "
    "no explanation, no code fences, no repetition of the text before or after the marker. "
    "Answer with nothing when nothing fits."
)


def chat_infill_request(req: FimRequest) -> Request:
    """A chat request that asks for the infill (for endpoints without FIM)."""
    parts: list[str] = []
    for snippet in req.snippets:
        parts.append(f"Related file {snippet.path}:\n```\n{snippet.text}\n```")
    where = f" {req.path}" if req.path else ""
    lang = f" ({req.language})" if req.language else ""
    parts.append(f"File{where}{lang}:\n```\n{req.prefix}{_CURSOR}{req.suffix}\n```")
    return Request(
        messages=(system(_INFILL_SYSTEM), user("\n\n".join(parts))),
        max_tokens=req.max_tokens,
        temperature=req.temperature,
        stop=req.stop[:4],
    )


def _strip_fences(text: str) -> str:
    """A chat model's answer without the code fence it may wrap the infill in."""
    stripped = text.strip("\n")
    if stripped.startswith("```") and stripped.endswith("```") and stripped.count("\n") >= 1:
        body = stripped[stripped.index("\n") + 1 : -3]
        return body.rstrip("\n")
    return text


class CompletionsFim:
    """``/v1/completions`` with ``suffix`` (``mistral=False``) or ``/v1/fim/completions``."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        name: str = "openai-compatible",
        mistral: bool = False,
        http_client: httpx.AsyncClient | None = None,
        first_byte_timeout: float = 15.0,
        idle_timeout: float = 15.0,
    ) -> None:
        self._model = model
        self._base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._name = name
        self._mistral = mistral
        self._client = http_client
        self._owns_client = http_client is None
        self._first_byte_timeout = first_byte_timeout
        self._idle_timeout = idle_timeout

    @property
    def name(self) -> str:
        return self._name

    @property
    def model(self) -> str:
        return self._model

    @property
    def api(self) -> str:
        return "mistral" if self._mistral else "completions"

    @property
    def url(self) -> str:
        return self._base_url + ("/fim/completions" if self._mistral else "/completions")

    def __repr__(self) -> str:
        return f"CompletionsFim(name={self._name!r}, model={self._model!r}, api={self.api!r})"

    async def aclose(self) -> None:
        if self._client is not None and self._owns_client:
            await self._client.aclose()
            self._client = None

    def body(self, req: FimRequest, *, stream: bool) -> dict[str, Any]:
        """The JSON body sent for ``req``."""
        body: dict[str, Any] = {
            "model": self._model,
            "prompt": fim_prompt(req),
            "suffix": req.suffix,
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
            "stream": stream,
        }
        if req.stop:
            body["stop"] = list(req.stop[:4])  # OpenAI's limit; others accept more
        return body

    async def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            # Building a client loads the CA bundle from disk: keep it off the event loop.
            self._client = await asyncio.to_thread(self._new_client)
            self._owns_client = True
        return self._client

    def _new_client(self) -> httpx.AsyncClient:
        import httpx

        from driveros.llm._http import _ssl_context

        timeout = httpx.Timeout(10.0, read=max(self._first_byte_timeout, self._idle_timeout))
        # No Nagle: httpx writes a request's head and body separately, and a small body held
        # back until the head is acknowledged costs a delayed ACK (40 ms) per completion.
        nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        transport = httpx.AsyncHTTPTransport(verify=_ssl_context(), socket_options=nodelay)
        return httpx.AsyncClient(timeout=timeout, transport=transport)

    def _headers(self, *, stream: bool) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream" if stream else "application/json",
        }
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        return headers

    def _piece(self, data: dict[str, Any]) -> str:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return ""
        choice = choices[0]
        if self._mistral:
            holder = choice.get("delta") or choice.get("message") or {}
            text = holder.get("content") if isinstance(holder, dict) else None
        else:
            text = choice.get("text")
        return text if isinstance(text, str) else ""

    async def complete(self, req: FimRequest) -> str:
        """The whole completion (pieces of :meth:`stream` joined)."""
        return "".join([piece async for piece in self.stream(req)])

    async def stream(self, req: FimRequest) -> AsyncIterator[str]:
        import httpx

        client = await self._http()
        content = json.dumps(self.body(req, stream=True), ensure_ascii=False).encode()
        try:
            async with client.stream(
                "POST", self.url, content=content, headers=self._headers(stream=True)
            ) as resp:
                if resp.status_code >= 400:
                    body = await resp.aread()
                    raise error_from_status(self._name, resp.status_code, resp.headers, body)
                async for piece in self._pieces(resp):
                    yield piece
        except httpx.HTTPError as exc:
            raise transport_error(self._name, exc, read_timeout=self._idle_timeout) from exc

    async def _pieces(self, resp: httpx.Response) -> AsyncIterator[str]:
        decoder = SSEDecoder()
        chunks = resp.aiter_bytes()
        limit, phase = self._first_byte_timeout, "first_byte"
        whole = "json" in resp.headers.get("content-type", "")
        parts: list[bytes] = []
        while True:
            try:
                async with asyncio.timeout(limit):
                    chunk = await anext(chunks, None)
            except TimeoutError:
                raise StallError(
                    f"no response from {self._name} for {limit:g} s",
                    provider=self._name,
                    after=limit,
                    phase=phase,
                ) from None
            if chunk is None:
                break
            limit, phase = self._idle_timeout, "idle"
            if whole:  # a server that ignored "stream": one JSON answer
                parts.append(chunk)
                continue
            for event in decoder.feed(chunk):
                if event.data.strip() == "[DONE]":
                    return
                piece = self._event_piece(event.data)
                if piece:
                    yield piece
        if whole:
            piece = self._event_piece(b"".join(parts).decode("utf-8", "replace"))
            if piece:
                yield piece

    def _event_piece(self, raw: str) -> str:
        try:
            data = json.loads(raw)
        except ValueError:
            raise StreamError(
                f"{self._name}: a completion event that is not JSON: {raw[:120]!r}",
                provider=self._name,
            ) from None
        if not isinstance(data, dict):
            return ""
        if "error" in data:
            raise error_from_event(self._name, data)
        return self._piece(data)


class ChatFim:
    """Infill through a chat provider (no FIM endpoint): :func:`chat_infill_request`."""

    def __init__(self, provider: Provider) -> None:
        self._provider = provider

    @property
    def name(self) -> str:
        return self._provider.name

    @property
    def model(self) -> str:
        return self._provider.model

    @property
    def api(self) -> str:
        return "chat"

    @property
    def chat(self) -> Provider:
        """The chat provider (next-edit suggestions ask it directly)."""
        return self._provider

    def __repr__(self) -> str:
        return f"ChatFim({self._provider!r})"

    async def aclose(self) -> None:
        await self._provider.aclose()

    async def complete(self, req: FimRequest) -> str:
        return "".join([piece async for piece in self.stream(req)])

    async def stream(self, req: FimRequest) -> AsyncIterator[str]:
        # Fences can only be judged on the whole answer: gather, then hand it out once.
        pieces: list[str] = []
        events = self._provider.stream(chat_infill_request(req))
        async with contextlib.aclosing(events):  # type: ignore[type-var]
            async for event in events:
                if isinstance(event, TextDelta):
                    pieces.append(event.text)
        text = _strip_fences("".join(pieces))
        if text:
            yield text


def choose_api(name: str, base_url: str | None, api: FimApi = "auto") -> FimApi:
    """The wire shape for provider ``name`` at ``base_url`` (None: the provider's default)."""
    if api != "auto":
        return api
    host = (urlsplit(base_url).hostname or "") if base_url else ""
    if host in _MISTRAL_HOSTS:
        return "mistral"
    if name == "ollama" or (name == "openai" and base_url):
        # Ollama, and an OpenAI-compatible server the user pointed at (llama.cpp, vLLM)
        return "completions"
    return "chat"


def fim_from_env(
    name: str,
    env: Environment,
    *,
    model: str | None = None,
    api: FimApi = "auto",
    http_client: httpx.AsyncClient | None = None,
    first_byte_timeout: float = 15.0,
    idle_timeout: float = 15.0,
) -> FimProvider:
    """The FIM provider for provider ``name`` as ``env`` configures it (the same key, endpoint
    and source rules as :func:`driveros.llm.provider_from_env`). Raises :class:`ConfigError`."""
    settings = env.provider(name)
    chosen = choose_api(settings.name, settings.base_url, api)
    if chosen == "chat":
        from driveros.llm._registry import provider_from_env

        chat = provider_from_env(
            name,
            env,
            model=model,
            http_client=http_client,
            first_byte_timeout=first_byte_timeout,
            idle_timeout=idle_timeout,
        )
        return ChatFim(chat)
    key_var = KEY_VARS[settings.name]
    api_key = settings.api_key.get_secret_value() if settings.api_key else None
    if key_var and not api_key:
        raise ConfigError(f"{key_var} is not set", provider=name, variable=key_var)
    if settings.endpoint_conflict:
        # docs/security.md: a key only goes to an endpoint from the key's own source
        raise ConfigError(
            settings.endpoint_conflict, provider=name, variable=URL_VARS[settings.name]
        )
    if settings.name == "ollama":
        from driveros.llm.openaicompat import ollama_base_url

        base_url = ollama_base_url(settings.base_url)
    else:
        base_url = settings.base_url or ""
    if not base_url:
        raise ConfigError(
            f"{name}: FIM needs an endpoint ({URL_VARS[settings.name]})",
            provider=name,
            variable=URL_VARS[settings.name],
        )
    chosen_model = model or settings.model or DEFAULT_FIM_MODELS.get(settings.name)
    if not chosen_model:
        raise ConfigError(
            f"{name}: no model for completions (set inlineCompletion.model or "
            f"{MODEL_VARS[settings.name]})",
            provider=name,
        )
    return CompletionsFim(
        chosen_model,
        base_url=base_url,
        api_key=api_key,
        name=name,
        mistral=chosen == "mistral",
        http_client=http_client,
        first_byte_timeout=first_byte_timeout,
        idle_timeout=idle_timeout,
    )
