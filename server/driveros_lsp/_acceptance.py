"""Acceptance: one pass of accepting (part of) a proposal, from the plan to the settle.

One object owns the whole pass, in order: reserve the files (before the first await, so a
racing accept never sends a file twice), plan the ``WorkspaceEdit`` (``_edits.plan_edit``,
re-planned without any closed file that changed on disk meanwhile), record the plan's
conflicts, send the edit through the :class:`EditorDesk`, and once the editor answered,
check the closed files again and settle: applied files leave the proposal, the last one
accepts it (its scratch copy is released; a kept copy's manifest follows the review).

The editor side (the run hub) only sends and receives: it hands over the open documents, sends
the edit, shows messages and announces the proposal. :meth:`Acceptance.run` returns once the
edit is sent (VS Code keeps ``workspace/applyEdit`` open until the user confirms): the answer
is awaited by the same object in a task the desk runs in the background.

Only the run manager (``_runs.py``) and an acceptance write a field of a run
(``tests/server/test_run_owner.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types as lsp

from driveros_lsp._edits import EditPlan, OpenDocument, Roots, closed_file_drift, plan_edit

if TYPE_CHECKING:
    from driveros_lsp._editor import ClientTraits
    from driveros_lsp._run import Run


class EditorDesk(Protocol):
    """What an acceptance needs of the editor (the run hub implements it)."""

    @property
    def traits(self) -> ClientTraits: ...

    def root(self, run: Run) -> Path:
        """The run's own folder."""
        ...

    def documents(self) -> dict[str, OpenDocument]:
        """The documents open in the editor now."""
        ...

    def send_edit(self, run: Run, edit: lsp.WorkspaceEdit) -> Awaitable[object]:
        """Send ``workspace/applyEdit`` now; the awaitable is the client's (hostile) answer."""
        ...

    def conflicts_kept(self, run: Run, conflicts: dict[str, str]) -> None:
        """Tell the user which files stay in the proposal, unapplied, and why."""
        ...

    def refused(self, run: Run, why: str, *, warn: bool) -> None:
        """The editor did not apply the edit (an error answer warns, a ``false`` is logged)."""
        ...

    def proposal_changed(self, run: Run) -> None: ...

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` in the background (canceled at server exit)."""
        ...


class Keeper(Protocol):
    """The scratch copy's side of a settle (the run manager)."""

    async def release(self, run: Run) -> None: ...
    async def keep(self, run: Run) -> None: ...


def _rebase(base: str, theirs: str, ours: str) -> str | None:
    from driveros.review import rebase_text

    merged: str | None = rebase_text(base, theirs, ours)
    return merged


class Acceptance:
    """Accept ``paths`` of ``run``'s proposal (default: everything pending), once."""

    def __init__(
        self, run: Run, paths: Sequence[str] | None, *, desk: EditorDesk, keeper: Keeper
    ) -> None:
        assert run.outcome is not None
        self._run = run
        self._paths = paths
        self._desk = desk
        self._keeper = keeper

    async def run(self) -> EditPlan:
        """Plan, record and send the edit; returns the plan once it is sent (or when there is
        nothing to send). ``plan.in_flight`` lists the asked files whose edit an earlier pass
        sent and the editor has not answered yet: they are never sent twice. Files that are
        not open in the editor (``version: null``) are checked on disk right before the edit
        is sent and again once the client answered: a change behind the edit's back is a
        conflict."""
        run = self._run
        wanted = list(self._paths) if self._paths is not None else list(run.pending)
        busy = [p for p in wanted if p in run.in_flight]
        todo = [p for p in wanted if p not in run.in_flight and p in run.pending]
        if not todo:
            return EditPlan(edit=None, in_flight=busy)
        run.in_flight.update(todo)  # before the first await
        try:
            plan = await self._plan(todo)
        except BaseException:
            run.in_flight.difference_update(todo)
            raise
        plan.in_flight = busy
        run.in_flight.difference_update(p for p in todo if p not in plan.included)
        run.conflicts = sorted(set(run.conflicts) - set(plan.included) | set(plan.conflicts))
        if plan.conflicts:
            self._desk.conflicts_kept(run, plan.conflicts)
        if plan.edit is not None:
            answer = self._desk.send_edit(run, plan.edit)
            self._desk.spawn(self._answered(answer, plan))
        elif plan.included:  # every planned file already holds the agent's version
            run.in_flight.difference_update(plan.included)
            self._settle(plan.included)
        return plan

    async def _plan(self, todo: list[str]) -> EditPlan:
        """Plan ``todo``, then re-read the closed files: any that changed since the plan read
        them is a conflict and the edit is planned again without it."""
        run, desk = self._run, self._desk
        assert run.outcome is not None
        traits = desk.traits
        root = desk.root(run)
        roots = Roots(root, tuple(Path(f) for f in run.request.folders))
        changes = [c for c in run.outcome.changes if str(c.path) in run.pending]
        drifted: dict[str, str] = {}
        while True:
            plan = await asyncio.to_thread(
                plan_edit,
                changes,
                root=roots,
                paths=[p for p in todo if p not in drifted],
                documents=desk.documents(),
                encoding=traits.encoding,
                annotate=traits.annotations,
                rationale=run.outcome.rationale,
                rebase=_rebase,
            )
            drift = await asyncio.to_thread(closed_file_drift, root, plan.closed, after=False)
            if not drift:
                plan.conflicts.update(drifted)
                return plan
            drifted.update(drift)

    async def _answered(self, answer: Awaitable[object], plan: EditPlan) -> None:
        """The editor's answer to the sent edit: settle what it applied."""
        run = self._run
        try:
            try:
                result = await answer
            except Exception as exc:
                self._desk.refused(run, f"the editor refused the edit: {exc}", warn=True)
                return
            # what the client answered is hostile input: anything but a confirmation is not one
            if not (isinstance(result, lsp.ApplyWorkspaceEditResult) and result.applied is True):
                reason = (
                    result.failure_reason
                    if isinstance(result, lsp.ApplyWorkspaceEditResult)
                    else None
                ) or "not confirmed"
                self._desk.refused(run, f"edit not applied ({reason})", warn=False)
                return
            drift = await asyncio.to_thread(
                closed_file_drift, self._desk.root(run), plan.closed, after=True
            )
        finally:
            run.in_flight.difference_update(plan.included)
        if drift and run.state == "proposed":
            # changed on disk behind the applied edit: a conflict of the proposal still open
            run.conflicts = sorted(set(run.conflicts) | set(drift))
            self._desk.conflicts_kept(run, drift)
        self._settle([p for p in plan.included if p not in drift])

    def _settle(self, applied: Sequence[str]) -> None:
        """``applied`` leave the proposal; the last one accepts it."""
        run = self._run
        if run.state != "proposed":
            return
        run.pending = [p for p in run.pending if p not in applied]
        if not run.pending:
            run.state = "accepted"
            self._desk.spawn(self._keeper.release(run))
        elif run.kept:
            self._desk.spawn(self._keeper.keep(run))
        self._desk.proposal_changed(run)
