"""Chat Completions adapter for OpenAI and compatible servers (OpenRouter, xAI, Ollama).

    from driveros.llm import openaicompat
    grok = openaicompat.xai("grok-4-fast", api_key=...)

Every preset's keyword ``settings`` are the fields of :class:`driveros.llm.HTTPSettings`
(``timeout=``, ``retry=``, ``first_byte_timeout=``, ``idle_timeout=``, ``headers=``).

Request mapping lives in ``_openai_request``, response mapping in ``_openai_response`` and
stream parsing in ``_openai_stream``; this module only wires them to HTTP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from driveros._errors import ConfigError
from driveros.llm._http import HTTPProvider, StreamState
from driveros.llm._openai_request import Dialect, build_body, is_reasoning_model
from driveros.llm._openai_response import parse_completion
from driveros.llm._openai_stream import OpenAIStreamState
from driveros.llm._settings import DEFAULT_HTTP, HTTPSettings
from driveros.llm._types import Request, Response

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEFAULT_MODELS",
    "Dialect",
    "OpenAICompatProvider",
    "is_reasoning_model",
    "ollama",
    "openai",
    "openrouter",
    "xai",
]

DEFAULT_MODELS: dict[str, str] = {
    "openai": "gpt-4.1-mini",
    "openrouter": "openai/gpt-4o-mini",
    "xai": "grok-4-fast",
    "ollama": "llama3.2",
}
DEFAULT_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "xai": "https://api.x.ai/v1",
    "ollama": "http://localhost:11434/v1",
}
_KEY_VARS = {"openai": "OPENAI_API_KEY", "openrouter": "OPENROUTER_API_KEY", "xai": "X_AI_API_KEY"}


class OpenAICompatProvider(HTTPProvider):
    """A Chat Completions endpoint. ``dialect`` captures what differs between servers."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        name: str = "openai-compatible",
        dialect: Dialect | None = None,
        http_client: httpx.AsyncClient | None = None,
        settings: HTTPSettings = DEFAULT_HTTP,
    ) -> None:
        super().__init__(
            name=name, model=model, base_url=base_url, http_client=http_client, settings=settings
        )
        self._api_key = api_key
        self.dialect = dialect or Dialect(family=name)

    def _path(self) -> str:
        return "/chat/completions"

    def _headers(self) -> dict[str, str]:
        headers = dict(self._extra_headers)
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        return headers

    def _body(self, req: Request, *, stream: bool) -> dict[str, Any]:
        return build_body(req, model=req.model or self._model, dialect=self.dialect, stream=stream)

    def _parse(self, data: dict[str, Any]) -> Response:
        return parse_completion(
            data, provider=self._name, family=self.dialect.family, model=self._model
        )

    def _stream_state(self) -> StreamState:
        return OpenAIStreamState(provider=self._name, family=self.dialect.family, model=self._model)


def _hosted(
    name: str,
    dialect: Dialect,
    model: str | None,
    api_key: str | None,
    base_url: str | None,
    http_client: httpx.AsyncClient | None,
    settings: dict[str, Any],
) -> OpenAICompatProvider:
    """A hosted service's preset: its default model and URL unless given; its key required."""
    if not api_key:
        raise ConfigError(
            f"{name}: no API key (pass api_key= or set {_KEY_VARS[name]})", provider=name
        )
    return OpenAICompatProvider(
        model or DEFAULT_MODELS[name],
        name=name,
        api_key=api_key,
        base_url=base_url or DEFAULT_URLS[name],
        http_client=http_client,
        dialect=dialect,
        settings=HTTPSettings(**settings),
    )


def openai(
    model: str | None = None,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    http_client: httpx.AsyncClient | None = None,
    **settings: Any,
) -> OpenAICompatProvider:
    """OpenAI's Chat Completions API (``max_completion_tokens`` always)."""
    dialect = Dialect(family="openai", max_completion_tokens=True, reasoning_field=None)
    return _hosted("openai", dialect, model, api_key, base_url, http_client, settings)


def openrouter(
    model: str | None = None,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    http_client: httpx.AsyncClient | None = None,
    **settings: Any,
) -> OpenAICompatProvider:
    """OpenRouter: ``reasoning`` object, cost in usage, ``reasoning_details`` replayed."""
    settings["headers"] = {"x-title": "driveros", **settings.pop("headers", {})}
    dialect = Dialect(
        family="openrouter", openrouter=True, reasoning_field="reasoning", cache_control=True
    )
    return _hosted("openrouter", dialect, model, api_key, base_url, http_client, settings)


def xai(
    model: str | None = None,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    http_client: httpx.AsyncClient | None = None,
    **settings: Any,
) -> OpenAICompatProvider:
    """xAI's OpenAI-compatible endpoint (``reasoning_content``; ``reasoning_effort``)."""
    dialect = Dialect(family="xai", reasoning_field="reasoning_content")
    return _hosted("xai", dialect, model, api_key, base_url, http_client, settings)


def ollama_base_url(host: str | None) -> str:
    """``OLLAMA_HOST`` in any of its forms (``host:port``, ``http://host``) -> ``.../v1``."""
    if not host:
        return DEFAULT_URLS["ollama"]
    url = host.strip().rstrip("/")
    if "://" not in url:
        # Ollama's own convention: a bare host means http on the default port.
        url = "http://" + (url if ":" in url else url + ":11434")
    return url if url.endswith("/v1") else url + "/v1"


def ollama(
    model: str | None = None,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    http_client: httpx.AsyncClient | None = None,
    **settings: Any,
) -> OpenAICompatProvider:
    """A local (or remote) Ollama server through its ``/v1`` endpoint; keyless by default."""
    return OpenAICompatProvider(
        model or DEFAULT_MODELS["ollama"],
        name="ollama",
        api_key=api_key,
        base_url=ollama_base_url(base_url),
        http_client=http_client,
        dialect=Dialect(family="ollama", reasoning_field="reasoning"),
        settings=HTTPSettings(**settings),
    )
