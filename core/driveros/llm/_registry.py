"""Named providers, and building them from a :class:`driveros.config.Environment`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from driveros._errors import ConfigError
from driveros.config import KEY_VARS, PROVIDER_ORDER, URL_VARS, Environment
from driveros.llm._provider import Provider

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

OLLAMA_PROBE = ("127.0.0.1", 11434)


def provider_from_env(
    name: str,
    env: Environment,
    *,
    model: str | None = None,
    base_url: str | None = None,
    http_client: httpx.AsyncClient | None = None,
    **options: Any,
) -> Provider:
    """Build the provider ``name`` from ``env``; flags (``model``, ``base_url``) win.

    Raises :class:`ConfigError` for an unknown name or a missing key, naming the variable
    (``"OPENAI_API_KEY is not set"``).
    """
    settings = env.provider(name)
    key_var = KEY_VARS[settings.name]
    api_key = settings.api_key.get_secret_value() if settings.api_key else None
    if key_var and not api_key:
        raise ConfigError(f"{key_var} is not set", provider=name, variable=key_var)
    if settings.endpoint_conflict and base_url is None:
        # docs/security.md, "A repository's `.env` redirects the provider endpoint and receives
        # the user's key": a key only goes to an endpoint from the key's own source
        raise ConfigError(
            settings.endpoint_conflict, provider=name, variable=URL_VARS[settings.name]
        )
    model = model or settings.model
    base_url = base_url or settings.base_url
    if settings.name == "anthropic":
        from driveros.llm.anthropic import claude

        return claude(model, api_key=api_key, base_url=base_url, http_client=http_client, **options)
    from driveros.llm.openaicompat import ollama, openai, openrouter, xai

    preset = {"openai": openai, "openrouter": openrouter, "xai": xai, "ollama": ollama}[
        settings.name
    ]
    return preset(model, api_key=api_key, base_url=base_url, http_client=http_client, **options)


async def ollama_answers(
    host: str = OLLAMA_PROBE[0], port: int = OLLAMA_PROBE[1], *, timeout: float = 0.3
) -> bool:
    """Whether something accepts TCP connections on Ollama's port (a short, cheap probe)."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


class Registry:
    """Providers by name. ``aclose()`` closes every provider it holds."""

    def __init__(self) -> None:
        self._providers: dict[str, Provider] = {}

    def add(self, name: str, provider: Provider) -> None:
        if name in self._providers:
            raise ConfigError(f"provider {name!r} is already registered", provider=name)
        self._providers[name] = provider

    def get(self, name: str) -> Provider | None:
        return self._providers.get(name)

    def must_get(self, name: str) -> Provider:
        provider = self._providers.get(name)
        if provider is None:
            known = ", ".join(self._providers) or "none configured"
            raise ConfigError(f"unknown provider {name!r} (known: {known})", provider=name)
        return provider

    def names(self) -> list[str]:
        """Names in insertion order (``from_env`` uses ``config.PROVIDER_ORDER``)."""
        return list(self._providers)

    def __len__(self) -> int:
        return len(self._providers)

    def __contains__(self, name: object) -> bool:
        return name in self._providers

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._providers))

    async def aclose(self) -> None:
        for provider in self._providers.values():
            await provider.aclose()

    async def __aenter__(self) -> Registry:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @classmethod
    async def from_env(
        cls,
        env: Environment,
        *,
        probe_ollama: bool = True,
        probe_timeout: float = 0.3,
        http_client: httpx.AsyncClient | None = None,
    ) -> Registry:
        """Every provider whose key is configured, in ``config.PROVIDER_ORDER``.

        Ollama is keyless: it is added when ``OLLAMA_HOST`` is set, or when ``probe_ollama``
        and something answers on localhost:11434 within ``probe_timeout`` seconds.
        """
        registry = cls()
        for name in PROVIDER_ORDER:
            settings = env.provider(name)
            if name == "ollama":
                if not settings.base_url and not (
                    probe_ollama and await ollama_answers(*OLLAMA_PROBE, timeout=probe_timeout)
                ):
                    continue
            elif settings.api_key is None:
                continue
            if settings.endpoint_conflict:
                log.warning("provider %s left out: %s", name, settings.endpoint_conflict)
                continue
            registry.add(name, provider_from_env(name, env, http_client=http_client))
        return registry
