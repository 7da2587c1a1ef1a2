"""``driveros doctor``, the provider section: which provider and model a run would use, where
they are configured, and whether its key is set (its name only, never its value)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal, Protocol

from driveros._errors import DriverosError

Status = Literal["ok", "warning", "missing"]


class Add(Protocol):
    """``Report.add`` of ``driveros doctor``."""

    def __call__(
        self, section: str, name: str, status: Status, detail: str, fix: str | None = None
    ) -> None: ...


def _default_model(name: str) -> str:
    from driveros.llm import anthropic, openaicompat

    if name == "anthropic":
        return anthropic.DEFAULT_MODEL
    return openaicompat.DEFAULT_MODELS.get(name, "?")


async def provider_section(add: Add, workspace: Path, *, trusted: bool | None) -> dict[str, Any]:
    """Add the provider checks to the report; return the section's facts."""
    from driveros.config import KEY_VARS, MODEL_VARS, load_environment, source_label
    from driveros.runs import pick_provider

    try:
        env = await asyncio.to_thread(load_environment, cwd=workspace, trusted=trusted)
    except (DriverosError, OSError) as exc:
        add("provider", "config", "missing", f"cannot read the configuration: {exc}")
        return {"name": None}
    for warning in env.warnings:
        add("provider", "config", "warning", warning)
    try:
        name = pick_provider(env, None)
    except DriverosError as exc:
        add(
            "provider",
            "provider",
            "missing",
            str(exc),
            "export ANTHROPIC_API_KEY=… (or another key) or put it in "
            "~/.config/driveros/env (docs/cli.md, Configuration)",
        )
        return {
            "name": None,
            "configured": [],
        }
    settings = env.provider(name)
    name = settings.name
    model = settings.model or _default_model(name)
    model_from = MODEL_VARS[name] if settings.model else "the provider's default"
    key_var = KEY_VARS[name]
    source = settings.key_source or settings.url_source
    where = source_label(source, workspace=workspace) if source else "nowhere"
    add("provider", "provider", "ok", f"{name} (configured in {where})")
    add("provider", "model", "ok", f"{model} (from {model_from})")
    if key_var is not None:
        # The variable's name only: never its value or any part of it.
        add("provider", "key", "ok", f"{key_var} is set")
    if settings.endpoint_conflict:
        add(
            "provider",
            "endpoint",
            "missing",
            settings.endpoint_conflict,
            "set the key and its endpoint in the same place",
        )
    configured = [n for n in KEY_VARS if env.provider(n).configured]
    return {
        "name": name,
        "model": model,
        "model_from": model_from,
        "source": source,
        "key_var": key_var,
        "key_present": settings.api_key is not None,
        "configured": configured,
        "workspace_env_read": env.workspace_trusted,
    }
