"""Embedding models for hybrid recall: the OpenAI-compatible ``/embeddings`` endpoint.

``MNEME_EMBED_MODEL`` names the model, optionally prefixed by the provider:
``openai:text-embedding-3-small``, ``openrouter:openai/text-embedding-3-small``,
``ollama:nomic-embed-text``. A bare name uses the first of OpenAI, OpenRouter, Ollama that is
configured. The full spec (provider prefix included) is what a store is pinned to.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import httpx

from driveros._errors import ConfigError, MemoryStoreError
from driveros.config import Environment

_DEFAULT_URLS = {
    "openai": "https://api.openai.com/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "ollama": "http://localhost:11434/v1",
}
EMBED_PROVIDERS: tuple[str, ...] = ("openai", "openrouter", "ollama")


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. ``model`` is the name a store is pinned to."""

    @property
    def model(self) -> str: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...

    async def aclose(self) -> None: ...


class OpenAICompatEmbedder:
    """POST ``{base_url}/embeddings`` with ``{"model", "input"}``; keeps the input order."""

    def __init__(
        self,
        model: str,
        *,
        spec: str | None = None,
        base_url: str,
        api_key: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
    ) -> None:
        self._wire_model = model
        self._spec = spec or model
        self._url = base_url.rstrip("/") + "/embeddings"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._owns_client = http_client is None
        self._client = http_client or httpx.AsyncClient(timeout=timeout)

    @property
    def model(self) -> str:
        return self._spec

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        body = {"model": self._wire_model, "input": list(texts)}
        try:
            resp = await self._client.post(self._url, json=body, headers=self._headers)
        except httpx.HTTPError as exc:
            raise MemoryStoreError(
                f"embedding request to {self._url} failed: {exc}", model=self._spec
            ) from exc
        if resp.status_code >= 400:
            raise MemoryStoreError(
                f"embedding model {self._spec} answered HTTP {resp.status_code}: {resp.text[:300]}",
                model=self._spec,
                status=resp.status_code,
            )
        try:
            data: Any = resp.json()
            rows = sorted(data["data"], key=lambda r: int(r.get("index", 0)))
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
        except (ValueError, KeyError, TypeError) as exc:
            raise MemoryStoreError(
                f"embedding model {self._spec} sent an unreadable answer", model=self._spec
            ) from exc
        if len(vectors) != len(texts) or any(not v for v in vectors):
            raise MemoryStoreError(
                f"embedding model {self._spec} returned {len(vectors)} vectors "
                f"for {len(texts)} inputs",
                model=self._spec,
            )
        return vectors

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()


def _ollama_url(host: str) -> str:
    url = host if "://" in host else f"http://{host}"
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def embedder_from_env(
    env: Environment, *, model: str | None = None, http_client: httpx.AsyncClient | None = None
) -> Embedder | None:
    """The embedder ``MNEME_EMBED_MODEL`` (or ``model``) names, or None when none is set."""
    spec = model or env.embed_model
    if not spec:
        return None
    provider, _, rest = spec.partition(":")
    if provider in EMBED_PROVIDERS and rest:
        wire = rest
    else:
        provider, wire = "", spec
        for name in EMBED_PROVIDERS:
            if env.provider(name).configured:
                provider = name
                break
        if not provider:
            raise ConfigError(
                f"MNEME_EMBED_MODEL={spec!r} needs a provider: set OPENAI_API_KEY, "
                "OPENROUTER_API_KEY or OLLAMA_HOST, or prefix the model (ollama:<model>)",
                embed_model=spec,
            )
        spec = f"{provider}:{wire}"
    penv = env.provider(provider)
    if provider != "ollama" and penv.api_key is None:
        raise ConfigError(
            f"embedding model {spec} needs {penv.key_var}", embed_model=spec, variable=penv.key_var
        )
    if provider == "ollama":
        base = _ollama_url(penv.base_url or _DEFAULT_URLS["ollama"])
    else:
        base = penv.base_url or _DEFAULT_URLS[provider]
    key = penv.api_key.get_secret_value() if penv.api_key is not None else None
    return OpenAICompatEmbedder(
        wire, spec=spec, base_url=base, api_key=key, http_client=http_client
    )
