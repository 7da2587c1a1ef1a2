"""Typed, fully defaulted server settings (camelCase on the wire).

Settings arrive in ``initializationOptions`` and in ``workspace/didChangeConfiguration``
(either the section object itself or ``{"driveros": {...}}``). A bad value never fails
``initialize``: :func:`parse_settings` keeps every valid field, replaces each invalid one
by its default, and returns the problems so the server can tell the user.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from driveros_lsp.protocol import SETTINGS_SECTION

ProviderName = Literal["openai", "openrouter", "xai", "ollama", "anthropic"]


class Settings(BaseModel):
    """What a user may configure for the agent runs started from the editor."""

    model_config = ConfigDict(
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        title="driveros",
    )

    provider: ProviderName | None = Field(
        default=None,
        description="Model provider; null picks the first one configured in the environment.",
    )
    model: str | None = Field(
        default=None, description="Model name; null uses the provider's default."
    )
    sandbox: Literal["local", "docker"] = Field(
        default="local", description="Where the agent's tools run."
    )
    runtime: Literal["runc", "runsc"] = Field(
        default="runc", description="Container runtime for the docker sandbox."
    )
    untrusted: bool = Field(default=False, description="Treat the workspace as untrusted.")
    network: bool = Field(default=False, description="Allow network access inside the sandbox.")
    approval: Literal["ask", "policy", "never"] = Field(
        default="ask",
        description="Tool approval: 'ask' asks you in the editor about what the policy would "
        "not allow (clients that cannot show message actions get 'policy'), 'policy' refuses "
        "it, 'never' refuses every command and edit.",
    )
    approval_timeout_s: float = Field(
        default=300.0,
        gt=0,
        le=86_400,
        description="Seconds an 'ask' question waits for your answer before it counts as Deny.",
    )
    memory: bool = Field(default=False, description="Use long-term memory (recall and store).")
    diagnostics: bool = Field(
        default=True,
        description=(
            "Run the project's checks (linters, type checkers, tests) after the agent's edits; "
            "off saves CPU when many runs are active."
        ),
    )
    council: bool = Field(
        default=False,
        description="Have the council (critic, author, referee models) review each proposal.",
    )
    max_iterations: int = Field(default=30, ge=1, le=500, description="Turn cap per run.")
    max_wall_s: float = Field(
        default=900.0, gt=0, le=86_400, description="Wall-clock cap per run, in seconds."
    )
    first_byte_timeout_s: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="Seconds to wait for the first byte of a model's answer before the run "
        "ends with a provider error.",
    )
    idle_timeout_s: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="Seconds a model's answer may stay silent mid-stream before the run ends "
        "with a provider error.",
    )
    max_cost_usd: float | None = Field(
        default=None,
        gt=0,
        le=10_000,
        description="US dollars a run may spend; the run stops before a turn that would pass "
        "it. null: no limit.",
    )
    max_context_tokens: int | None = Field(
        default=None,
        ge=1000,
        le=10_000_000,
        description="Context budget per request in tokens; null follows the model's context "
        "window. Near it the run summarizes its older turns.",
    )
    max_concurrent_runs: int = Field(
        default=4, ge=1, le=32, description="Runs allowed at once; more are refused."
    )


def _section(raw: Any) -> Any:
    if isinstance(raw, dict) and isinstance(raw.get(SETTINGS_SECTION), dict):
        return raw[SETTINGS_SECTION]
    return raw


def parse_settings(raw: Any, *, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Validate ``raw`` field by field over ``base`` (default: all defaults).

    Returns the settings and one human-readable line per problem (unknown key, bad value);
    a problem field keeps its default. ``None`` means "no settings" and is not a problem, nor
    is an empty list: an empty Lua table (Neovim) or an empty array is encoded as ``[]``.
    """
    defaults = base or Settings()
    raw = _section(raw)
    if raw is None or raw == []:
        return defaults, []
    if not isinstance(raw, dict):
        return defaults, [f"settings must be an object, got {type(raw).__name__}"]
    known = {name: info.alias or name for name, info in Settings.model_fields.items()}
    by_wire = {alias: name for name, alias in known.items()} | {n: n for n in known}
    problems: list[str] = []
    values: dict[str, Any] = defaults.model_dump()
    for key, value in raw.items():
        name = by_wire.get(key)
        if name is None:
            problems.append(f"unknown setting {key!r} ignored")
            continue
        candidate = {**values, name: value}
        try:
            Settings.model_validate(candidate)
        except ValidationError as exc:
            reason = "; ".join(err["msg"] for err in exc.errors())
            problems.append(f"setting {known[name]!r}: {reason}; using the default")
            continue
        values[name] = value
    return Settings.model_validate(values), problems


def settings_json_schema() -> dict[str, Any]:
    """The JSON Schema of the settings object, with wire (camelCase) names and defaults."""
    return Settings.model_json_schema(by_alias=True)
