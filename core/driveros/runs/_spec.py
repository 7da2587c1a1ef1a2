"""The spec of one run: the user's options and what belongs to this run."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from driveros.agent import ApproveMode
from driveros.config import ASK_TIMEOUT_S
from driveros.diagnostics import DiagnosticItem
from driveros.runs._options import RunOptions


class RunSpec(RunOptions):
    """Everything that defines one agent run (the CLI flags and the LSP commands map here)."""

    task: str
    workspace: Path
    approve: ApproveMode = "policy"
    #: ``approve="ask"``: seconds to wait for an answer before it counts as a denial.
    ask_timeout_s: float = Field(default=ASK_TIMEOUT_S, gt=0)
    #: Work on a scratch copy (driveros.review) and propose the changes instead of writing.
    review: bool = False
    #: Unsaved editor buffers: workspace-relative path -> text (needs ``review``).
    overlays: dict[str, str] = Field(default_factory=dict)
    #: Diagnostics the task should make disappear (a fix task).
    targets: list[DiagnosticItem] = Field(default_factory=list)
    run_id: str | None = None
    #: Globs the user exempts from the secret-file deny list (docs/sandbox.md, "Secret files").
    allow_secret_files: list[str] = Field(default_factory=list)
    #: The user trusts this workspace (``driveros trust``, ``--trust``): its own diagnostics
    #: checks are read from ``workspace`` at start and run through ``approve`` (docs/security.md).
    workspace_trusted: bool = False
