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

from driveros.config import ASK_TIMEOUT_S, ProviderName
from driveros.runs import RunOptions
from driveros_lsp.protocol import SETTINGS_SECTION


class InlineCompletionSettings(BaseModel):
    """Ghost text and next-edit suggestions (``textDocument/inlineCompletion``)."""

    model_config = ConfigDict(
        frozen=True, alias_generator=to_camel, populate_by_name=True, extra="forbid"
    )

    enabled: bool = Field(
        default=True, description="Answer textDocument/inlineCompletion (ghost text)."
    )
    provider: ProviderName | None = Field(
        default=None,
        description="Model provider for completions; null uses the agent's provider setting "
        "(or the first one configured in the environment).",
    )
    model: str | None = Field(
        default=None,
        description="Model for completions; null: the provider's configured model (a FIM code "
        "model for Ollama).",
    )
    api: Literal["auto", "completions", "mistral", "chat"] = Field(
        default="auto",
        description="Wire shape: 'completions' (/v1/completions with suffix: Ollama, llama.cpp, "
        "vLLM), 'mistral' (/v1/fim/completions), 'chat' (a chat prompt built for infill); "
        "'auto' picks by provider and endpoint.",
    )
    debounce_ms: int = Field(
        default=75, ge=0, le=2000, description="Milliseconds of quiet typing before asking."
    )
    max_tokens: int = Field(
        default=128, ge=1, le=2048, description="Most tokens a completion may have."
    )
    context_tokens: int = Field(
        default=1536,
        ge=256,
        le=32_000,
        description="Token budget of the context sent per request (prefix, suffix, snippets).",
    )
    next_edit: bool = Field(
        default=False,
        description="Offer next-edit suggestions: after an edit, an item that replaces text "
        "near or after the cursor, predicted from the recent edits.",
    )
    next_edit_confidence: float = Field(
        default=0.7,
        ge=0,
        le=1,
        description="Lowest confidence (0-1) at which a next-edit suggestion is offered.",
    )


class Settings(RunOptions):
    """What a user may configure for the agent runs started from the editor."""

    # The run options every front end shares come from driveros.runs.RunOptions (provider,
    # tier, limits, with their defaults and bounds); the fields below are the editor's own.

    model_config = ConfigDict(
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        title="driveros",
    )

    approval: Literal["ask", "policy", "never"] = Field(
        default="ask",
        description="Tool approval: 'ask' asks you in the editor about what the policy would "
        "not allow (clients that cannot show message actions get 'policy'), 'policy' refuses "
        "it, 'never' refuses every command and edit.",
    )
    approval_timeout_s: float = Field(
        default=ASK_TIMEOUT_S,
        gt=0,
        le=86_400,
        description="Seconds an 'ask' question waits for your answer before it counts as Deny.",
    )
    council: bool = Field(
        default=False,
        description="Have the council (critic, author, referee models) review each proposal.",
    )
    max_concurrent_runs: int = Field(
        default=4, ge=1, le=32, description="Runs allowed at once; more are refused."
    )
    publish_diagnostics: bool = Field(
        default=False,
        description="After each save, publish the build errors the diagnostics feed finds in "
        "the workspace (as driveros agent --fix sees them), computed in the local sandbox with "
        "the network off.",
    )
    inline_completion: InlineCompletionSettings = Field(
        default_factory=InlineCompletionSettings,
        description="Ghost text and next-edit suggestions from your provider.",
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
