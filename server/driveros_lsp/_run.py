"""One run's record in the language server: its state, outcome and review bookkeeping.

Only the run manager (:mod:`driveros_lsp._runs`) writes a field of a :class:`Run`
(``tests/server/test_run_owner.py``); everyone else reads.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from driveros import DriverosError

if TYPE_CHECKING:
    from driveros_lsp._runner import RunOutcome, RunRequest

RunState = Literal["running", "proposed", "finished", "failed", "canceled", "accepted", "rejected"]


class RunError(DriverosError):
    """A run command cannot be carried out (unknown id, wrong state, too many runs)."""


@dataclass
class Run:
    """Mutable bookkeeping for one run (internal to the server)."""

    run_id: str
    request: RunRequest
    state: RunState = "running"
    started_at: float = field(default_factory=time.time)
    outcome: RunOutcome | None = None
    error: str | None = None
    task: asyncio.Task[None] | None = None
    #: Workspace-relative paths of the proposal still awaiting review.
    pending: list[str] = field(default_factory=list)
    #: Paths the last review attempt could not apply (edited in the editor meanwhile).
    conflicts: list[str] = field(default_factory=list)
    #: Paths whose ``workspace/applyEdit`` is sent and not answered yet (never sent twice).
    in_flight: set[str] = field(default_factory=set)
    #: The proposal's scratch copy is kept past this process (it survives a restart).
    kept: bool = False
    #: Reopened from a proposal an earlier server kept.
    restored: bool = False
    epoch: int = 0
