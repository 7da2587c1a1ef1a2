"""One run's record in the language server (state, outcome, review bookkeeping) and the
interfaces of the run manager: what it reports (RunObserver) and what features may ask (Runs).

Only the run manager (:mod:`driveros_lsp._runs`) and the accept pass it settles with
(:mod:`driveros_lsp._acceptance`) write a field of a :class:`Run`
(``tests/server/test_run_owner.py``); everyone else reads.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

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


class RunObserver(Protocol):
    def run_started(self, run: Run) -> None: ...
    def run_event(self, run: Run, event: Any) -> None: ...
    def run_finished(self, run: Run) -> None: ...
    def proposal_changed(self, run: Run) -> None:
        """Files left the proposal (accepted or rejected), or it was accepted or rejected."""
        ...


class Unobserved:
    def run_started(self, run: Run) -> None:
        pass

    def run_event(self, run: Run, event: Any) -> None:
        pass

    def run_finished(self, run: Run) -> None:
        pass

    def proposal_changed(self, run: Run) -> None:
        pass


class Runs(Protocol):
    """What the feature modules may ask of the run manager (``server.runs``): start, find,
    cancel, reject and reopen runs. What an accept reserved, planned and applied is recorded
    by its :class:`~driveros_lsp._acceptance.Acceptance` pass alone."""

    def get(self, run_id: str) -> Run: ...
    def runs(self) -> list[Run]: ...
    def start(self, request: RunRequest, *, limit: int) -> Run: ...
    async def cancel(self, run_id: str) -> Run: ...
    async def reject(self, run: Run, paths: Sequence[str] | None, feedback: str | None) -> None: ...
    async def restore(self, request: Callable[[str, str], RunRequest]) -> list[Run]: ...
    async def aclose(self) -> None: ...
