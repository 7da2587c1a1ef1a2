"""The one place that reads the process environment (and a ``.env`` file).

Everything else receives an :class:`Environment` value. Precedence: flags (applied by the
caller) > real environment variables > ``.env`` in the working directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from driveros._errors import ConfigError

ProviderName = Literal["openai", "openrouter", "xai", "ollama", "anthropic"]

#: The documented order in which ``Registry.from_env()`` adds providers.
PROVIDER_ORDER: tuple[ProviderName, ...] = ("anthropic", "openai", "openrouter", "xai", "ollama")

KEY_VARS: dict[ProviderName, str | None] = {
    "openai": "OPENAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "xai": "X_AI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "ollama": None,
}
MODEL_VARS: dict[ProviderName, str] = {
    "openai": "OPENAI_MODEL",
    "openrouter": "OPENROUTER_MODEL",
    "xai": "XAI_MODEL",
    "anthropic": "ANTHROPIC_MODEL",
    "ollama": "OLLAMA_MODEL",
}
URL_VARS: dict[ProviderName, str] = {
    "openai": "OPENAI_BASE_URL",
    "openrouter": "OPENROUTER_BASE_URL",
    "xai": "XAI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
    "ollama": "OLLAMA_HOST",
}
#: Extra names whose values are secrets wherever they appear (redacted from events and logs).
SECRET_NAME_HINTS: tuple[str, ...] = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")


class ProviderEnv(BaseModel):
    """What the environment says about one provider."""

    model_config = ConfigDict(frozen=True)

    name: ProviderName
    api_key: SecretStr | None = None
    model: str | None = None
    base_url: str | None = None

    @property
    def key_var(self) -> str | None:
        return KEY_VARS[self.name]


class Environment(BaseModel):
    """A frozen snapshot of the configuration-relevant environment."""

    model_config = ConfigDict(frozen=True)

    providers: dict[str, ProviderEnv] = Field(default_factory=dict)
    embed_model: str | None = None
    memory_path: str | None = None
    #: The dogfood corpus file (DRIVEROS_CORPUS); default: .driveros/corpus.jsonl in the repo.
    corpus_path: str | None = None
    #: GitHub access for ``driveros issue-bot --github`` (GITHUB_TOKEN, GITHUB_API_URL).
    github_token: SecretStr | None = None
    github_api_url: str = "https://api.github.com"
    secrets: tuple[SecretStr, ...] = ()
    raw: dict[str, str] = Field(default_factory=dict, repr=False, exclude=True)

    def provider(self, name: str) -> ProviderEnv:
        if name not in KEY_VARS:
            raise ConfigError(
                f"unknown provider {name!r}; choose one of {', '.join(PROVIDER_ORDER)}",
                provider=name,
            )
        return self.providers.get(name) or ProviderEnv(name=name)

    def secret_values(self) -> list[str]:
        """Every secret value seen in the environment (for redaction), longest first."""
        values = {s.get_secret_value() for s in self.secrets}
        return sorted((v for v in values if len(v) >= 6), key=len, reverse=True)

    def get(self, name: str, default: str | None = None) -> str | None:
        """A raw variable, for the few settings that have no typed field yet."""
        return self.raw.get(name, default)


def _read_dotenv(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    from dotenv import dotenv_values  # lazy: keeps `import driveros` cheap

    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(hint in upper for hint in SECRET_NAME_HINTS)


def load_environment(
    *, cwd: Path | None = None, environ: Mapping[str, str] | None = None
) -> Environment:
    """Read ``.env`` in ``cwd`` (default: the working directory) under the real environment."""
    base = Path.cwd() if cwd is None else cwd
    merged: dict[str, str] = _read_dotenv(base / ".env")
    merged.update(os.environ if environ is None else environ)

    providers: dict[str, ProviderEnv] = {}
    for name in PROVIDER_ORDER:
        key_var = KEY_VARS[name]
        key = merged.get(key_var) if key_var else None
        providers[name] = ProviderEnv(
            name=name,
            api_key=SecretStr(key) if key else None,
            model=merged.get(MODEL_VARS[name]) or None,
            base_url=merged.get(URL_VARS[name]) or None,
        )
    secrets = tuple(SecretStr(v) for k, v in merged.items() if v and is_secret_name(k))
    return Environment(
        providers=providers,
        embed_model=merged.get("MNEME_EMBED_MODEL") or None,
        memory_path=merged.get("DRIVEROS_MEMORY_PATH") or None,
        corpus_path=merged.get("DRIVEROS_CORPUS") or None,
        github_token=SecretStr(merged["GITHUB_TOKEN"]) if merged.get("GITHUB_TOKEN") else None,
        github_api_url=merged.get("GITHUB_API_URL") or "https://api.github.com",
        secrets=secrets,
        raw=dict(merged),
    )
