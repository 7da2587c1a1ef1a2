"""The options a user sets for their runs, once for every front end, and the spec of one run.

:class:`RunOptions` holds the knobs every front end offers (the CLI's flags, the editor's
settings, ``driveros acp``'s flags): provider, tier, limits. Their types, defaults, bounds,
choices and help are written here only: the flags of ``driveros agent`` and ``driveros acp``
are generated from these fields (``driveros.cli._options.add_run_options``), the language
server's settings and ACP's are subclasses with their own extra fields.
:class:`HeadlessOptions` adds what only the front ends without an editor take as flags;
:class:`RunSpec` adds one run's task, workspace, approval and review.
This module stays light (no agent, no LLM stack): the language server imports it at start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from driveros.config import (
    ASK_TIMEOUT_S,
    FIRST_BYTE_TIMEOUT_S,
    IDLE_TIMEOUT_S,
    MAX_ITERATIONS,
    MAX_WALL_S,
    ApproveMode,
    ContainerRuntime,
    ProviderName,
    SandboxKind,
)
from driveros.diagnostics import DiagnosticItem
from driveros.runs._added import AddedDir


class RunOptions(BaseModel):
    """The options of a run that a user configures (the same for every run they start)."""

    model_config = ConfigDict(frozen=True)

    provider: ProviderName | None = Field(
        default=None,
        description="Model provider; null picks the first one configured in the environment.",
    )
    model: str | None = Field(
        default=None, description="Model name; null uses the provider's default."
    )
    sandbox: SandboxKind = Field(default="local", description="Where the agent's tools run.")
    runtime: ContainerRuntime = Field(
        default="runc", description="Container runtime for the docker sandbox."
    )
    untrusted: bool = Field(default=False, description="Treat the workspace as untrusted.")
    network: bool = Field(default=False, description="Allow network access inside the sandbox.")
    memory: bool = Field(default=False, description="Use long-term memory (recall and store).")
    diagnostics: bool = Field(
        default=True,
        description=(
            "Run the project's checks (linters, type checkers, tests) after the agent's edits; "
            "off saves CPU when many runs are active."
        ),
    )
    max_iterations: int = Field(
        default=MAX_ITERATIONS, ge=1, le=500, description="Turn cap per run."
    )
    max_wall_s: float = Field(
        default=MAX_WALL_S, gt=0, le=86_400, description="Wall-clock cap per run, in seconds."
    )
    first_byte_timeout_s: float = Field(
        default=FIRST_BYTE_TIMEOUT_S,
        gt=0,
        le=3600,
        description="Seconds to wait for the first byte of a model's answer before the run "
        "ends with a provider error.",
    )
    idle_timeout_s: float = Field(
        default=IDLE_TIMEOUT_S,
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

    @classmethod
    def of(cls, source: object) -> RunOptions:
        """The run options a settings object carries (its attributes named like the options;
        a missing one keeps its default)."""
        return RunOptions.model_validate(source, from_attributes=True)

    def spec(self, **run: Any) -> RunSpec:
        """The spec of one run with these options (and, for :class:`HeadlessOptions`, theirs);
        ``run`` names the per-run fields (and may override an option for this run)."""
        shared = HeadlessOptions if isinstance(self, HeadlessOptions) else RunOptions
        own = {name: getattr(self, name) for name in shared.model_fields}
        return RunSpec.model_validate({**own, **run})


class HeadlessOptions(RunOptions):
    """The run options plus what the front ends without an editor (``driveros agent``,
    ``driveros acp``) take as flags for every run: the editor words these its own way
    (``approvalTimeoutS``) or reads them from the environment."""

    ask_timeout_s: float = Field(
        default=ASK_TIMEOUT_S,
        gt=0,
        le=86_400,
        description="Seconds a permission question waits for an answer before it counts as "
        "a denial.",
    )
    otel: bool = Field(
        default=False,
        description="Export the run's spans over OpenTelemetry (OTLP/HTTP to "
        "OTEL_EXPORTER_OTLP_ENDPOINT, default localhost:4318; the variable alone turns it on); "
        "needs driveros[otel].",
    )


class RunSpec(HeadlessOptions):
    """Everything that defines one agent run (the CLI flags and the LSP commands map here).

    A field with a description is a flag of ``driveros agent`` (``cli/_options.py``); the
    others are set by the front end itself."""

    task: str
    workspace: Path
    approve: ApproveMode = Field(
        default="policy",
        description="Who decides tool calls that are not read-only: ask (on /dev/tty; "
        "interactive is an alias), policy (allowlist, the rest refused), never (read-only "
        "tools only).",
    )
    review: bool = Field(
        default=False,
        description="Work on a scratch copy, then review the diff (your files are untouched "
        "until the review action).",
    )
    #: Unsaved editor buffers: workspace-relative path -> text (needs ``review``).
    overlays: dict[str, str] = Field(default_factory=dict)
    #: Diagnostics the task should make disappear (a fix task).
    targets: list[DiagnosticItem] = Field(default_factory=list)
    run_id: str | None = None
    #: Globs the user exempts from the secret-file deny list (docs/sandbox.md, "Secret files").
    allow_secret_files: list[str] = Field(
        default_factory=list,
        description="Let the agent read a deny-listed secret file (.env, keys...); repeatable.",
    )
    #: The user trusts this workspace (``driveros trust``, ``--trust``): its own diagnostics
    #: checks are read from ``workspace`` at start and run through ``approve`` (docs/security.md).
    workspace_trusted: bool = False
    #: Folders the run reaches besides the workspace (``--add-dir DIR[:rw]``; a bare path is
    #: a read-only one): see :class:`AddedDir`. Never read as configuration.
    add_dirs: list[AddedDir] = Field(default_factory=list)
