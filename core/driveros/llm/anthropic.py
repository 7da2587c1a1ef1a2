"""Native Anthropic Messages API adapter (not the OpenAI-compatible shim).

    from driveros.llm import anthropic
    claude = anthropic.claude("claude-sonnet-4-5", api_key=...)

Request mapping lives in ``_anthropic_request``, response mapping in ``_anthropic_response``
and stream parsing in ``_anthropic_stream``; this module only wires them to HTTP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from driveros._errors import ConfigError
from driveros.llm._anthropic_request import build_body, supports_adaptive_thinking
from driveros.llm._anthropic_response import parse_message
from driveros.llm._anthropic_stream import AnthropicStreamState
from driveros.llm._http import HTTPProvider, StreamState
from driveros.llm._settings import DEFAULT_HTTP, HTTPSettings
from driveros.llm._types import Request, Response

if TYPE_CHECKING:
    import httpx

__all__ = [
    "API_VERSION",
    "DEFAULT_MODEL",
    "AnthropicProvider",
    "claude",
    "supports_adaptive_thinking",
]

API_VERSION = "2023-06-01"
DEFAULT_MODEL = "claude-sonnet-4-5"
DEFAULT_URL = "https://api.anthropic.com"


class AnthropicProvider(HTTPProvider):
    """The Messages API. Thinking blocks are replayed unmodified and in order."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str = DEFAULT_URL,
        name: str = "anthropic",
        http_client: httpx.AsyncClient | None = None,
        settings: HTTPSettings = DEFAULT_HTTP,
        betas: tuple[str, ...] = (),
    ) -> None:
        base = base_url.rstrip("/")
        # ANTHROPIC_BASE_URL is the host (as in the official SDK); tolerate a trailing /v1.
        base = base.removesuffix("/v1")
        super().__init__(
            name=name, model=model, base_url=base, http_client=http_client, settings=settings
        )
        self._api_key = api_key
        self._betas = betas

    def _path(self) -> str:
        return "/v1/messages"

    def _headers(self) -> dict[str, str]:
        headers = {"x-api-key": self._api_key, "anthropic-version": API_VERSION}
        if self._betas:
            headers["anthropic-beta"] = ",".join(self._betas)
        headers.update(self._extra_headers)
        return headers

    def _body(self, req: Request, *, stream: bool) -> dict[str, Any]:
        return build_body(req, model=req.model or self._model, stream=stream)

    def _parse(self, data: dict[str, Any]) -> Response:
        return parse_message(data, provider=self._name, model=self._model)

    def _stream_state(self) -> StreamState:
        return AnthropicStreamState(provider=self._name, model=self._model)


def claude(
    model: str | None = None,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    http_client: httpx.AsyncClient | None = None,
    betas: tuple[str, ...] = (),
    **settings: Any,
) -> AnthropicProvider:
    """Anthropic's Messages API; ``model`` defaults to :data:`DEFAULT_MODEL`; ``settings``
    are the fields of :class:`driveros.llm.HTTPSettings` (``timeout=``, ``retry=``, ...)."""
    if not api_key:
        raise ConfigError(
            "anthropic: no API key (pass api_key= or set ANTHROPIC_API_KEY)", provider="anthropic"
        )
    return AnthropicProvider(
        model or DEFAULT_MODEL,
        api_key=api_key,
        base_url=base_url or DEFAULT_URL,
        http_client=http_client,
        settings=HTTPSettings(**settings),
        betas=betas,
    )
