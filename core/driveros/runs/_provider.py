"""Which model provider a run talks to, and building it."""

from __future__ import annotations

from driveros._errors import ConfigError
from driveros.config import KEY_VARS, PROVIDER_ORDER, Environment
from driveros.llm import Provider, provider_from_env
from driveros.runs._options import RunOptions


def pick_provider(env: Environment, name: str | None) -> str:
    """The provider to use: ``name``, or the first configured one in PROVIDER_ORDER."""
    if name is not None:
        env.provider(name)  # validates the name
        return name
    for candidate in PROVIDER_ORDER:
        if env.provider(candidate).configured:
            return candidate
    wanted = ", ".join(v for v in KEY_VARS.values() if v)
    raise ConfigError(f"no model provider is configured: set one of {wanted}, or OLLAMA_HOST")


def make_provider(options: RunOptions, env: Environment) -> Provider:
    """The provider the options name (or the first configured one), with their stall limits."""
    return provider_from_env(
        pick_provider(env, options.provider),
        env,
        model=options.model,
        first_byte_timeout=options.first_byte_timeout_s,
        idle_timeout=options.idle_timeout_s,
    )
