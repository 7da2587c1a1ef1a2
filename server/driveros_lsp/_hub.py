"""RunHub: what the editor sees of runs (trace, diagnostics, proposal, review).

The :class:`~driveros_lsp._runs.RunManager` reports run life-cycle events here; the hub turns
them into ``$/progress``, ``driveros/trace``, ``textDocument/publishDiagnostics``,
``driveros/proposal`` and ``workspace/applyEdit``. It never awaits the client's answer to an
``applyEdit`` on a request path: VS Code keeps that request open until the user confirms.
The hub holds no run state: an accept is one :class:`~driveros_lsp._acceptance.Acceptance`
pass (plan, edit, settle), for which the hub only sends the edit and hands back the answer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from driveros_lsp._acceptance import Acceptance
from driveros_lsp._diagnostics import DiagnosticsBoard
from driveros_lsp._editor import ClientTraits, Editor
from driveros_lsp._edits import EditPlan, OpenDocument
from driveros_lsp._runs import Run, RunManager
from driveros_lsp._trace import TraceChannel, TraceSender, TraceTargets
from driveros_lsp._trace_locations import editor_locator
from driveros_lsp.protocol import NOTIFY_PROPOSAL, PROGRESS_TOKEN_PREFIX
from driveros_lsp.protocol_models import ProposalParams, council_payload, proposal_file

if TYPE_CHECKING:
    from driveros.agent import Event

logger = logging.getLogger(__name__)


class RunHub:
    def __init__(self, server: Editor, runs: RunManager) -> None:
        self._server = server
        self._runs = runs
        self._channels: dict[str, TraceChannel] = {}
        #: Channels whose flusher the server's exit stopped: their run still ends on them.
        self._cut: dict[str, TraceChannel] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.board = DiagnosticsBoard(server)

    # -- RunObserver -------------------------------------------------------------------
    def run_started(self, run: Run) -> None:
        traits = self._server.traits
        server = self._server

        async def create_progress(token: str) -> object:
            return await server.work_done_progress.create_async(token)

        def progress(token: str, value: dict[str, Any]) -> None:
            server.notify(lsp.PROGRESS, lsp.ProgressParams(token=token, value=value))

        sender = TraceSender(
            notify=server.notify,
            create_progress=create_progress,
            progress=progress,
            log=server.log,
        )
        old = self._channels.pop(run.run_id, None)
        if old is not None:
            old.cancel()
        self._channels[run.run_id] = TraceChannel(
            run_id=run.run_id,
            title=_title(run.request.label),
            token=f"{PROGRESS_TOKEN_PREFIX}{run.run_id}-{run.epoch}",
            targets=TraceTargets(progress=traits.progress, trace=traits.trace),
            sender=sender,
            locate=editor_locator(server, lambda: self.root(run)),
        )

    def run_event(self, run: Run, event: Event) -> None:
        channel = self._channels.get(run.run_id)
        if channel is not None:
            channel.push(event)
        if event.type == "diagnostics":
            self.board.update(run.run_id, event, self.root(run))

    def run_finished(self, run: Run) -> None:
        """The run's state is settled: its trace ends (the held ``result`` last), then the
        run's end is announced, in that order (docs/protocol.md, "Trace"). This is the one
        place that makes sure every run's trace ends with exactly one ``result``: when the
        agent never wrote one, the run's settled state makes it (:func:`settled_result`)."""
        self.board.clear(run.run_id)

        def result(seq: int) -> Event:
            return settled_result(run, seq)

        def then() -> None:
            self._announce_end(run)

        channel = self._channels.pop(run.run_id, None)
        cut = self._cut.pop(run.run_id, None)
        if channel is not None:
            channel.finish(_end_message(run), then, result=result)
        elif cut is not None:  # the server is exiting: at once, the client is still there
            cut.finish_now(_end_message(run), then, result=result)
        else:
            self._announce_end(run)

    def _announce_end(self, run: Run) -> None:
        if run.state == "failed":
            self._server.show(
                f"driveros run {run.run_id} failed: {run.error}", lsp.MessageType.Error
            )
        result = run.outcome.result if run.outcome is not None else None
        outcome = result.outcome if result is not None else None
        if result is not None and outcome in ("setup_error", "provider_error"):
            detail = result.error or outcome
            self._server.show(f"driveros run {run.run_id}: {detail}", lsp.MessageType.Error)
        if run.state == "proposed":
            self.send_proposal(run)
            if self._server.traits.annotations:
                self._spawn(self.review(run, None))
        elif run.state == "canceled" and run.outcome is not None:
            self.send_proposal(run)  # a discarded proposal: no files left

    # -- the proposal ------------------------------------------------------------------
    def proposal_payload(self, run: Run) -> dict[str, Any]:
        root = self.root(run)
        changes = run.outcome.changes if run.outcome is not None else ()
        files = [
            proposal_file(c, root=root, conflicts=run.conflicts)
            for c in changes
            if str(c.path) in run.pending
        ]
        return ProposalParams(
            run_id=run.run_id,
            state=run.state,
            rationale=run.outcome.rationale if run.outcome is not None else "",
            council=council_payload(run.outcome.council if run.outcome is not None else None),
            files=files,
        ).wire()

    def send_proposal(self, run: Run) -> None:
        self._server.notify(NOTIFY_PROPOSAL, self.proposal_payload(run))

    def proposal_changed(self, run: Run) -> None:
        self.send_proposal(run)

    async def review(self, run: Run, paths: Sequence[str] | None) -> EditPlan:
        """Accept ``paths`` (default: everything pending): one :class:`Acceptance` pass plans,
        records and settles; the hub only sends its edit and hands back the answer. Returns
        once the edit is sent (its answer is awaited in the background)."""
        return await Acceptance(run, paths, desk=self, keeper=self._runs).run()

    # -- EditorDesk: what an acceptance sends and receives -------------------------------
    @property
    def traits(self) -> ClientTraits:
        return self._server.traits

    def root(self, run: Run) -> Path:
        """The run's own folder (a multi-root workspace runs each fix in its file's folder)."""
        return (
            Path(run.request.workspace) if run.request.workspace else self._server.workspace_root()
        )

    def documents(self) -> dict[str, OpenDocument]:
        return {
            uri: OpenDocument(uri=uri, version=doc.version or 0, text=doc.source)
            for uri, doc in self._server.workspace.text_documents.items()
        }

    def send_edit(self, run: Run, edit: lsp.WorkspaceEdit) -> Awaitable[object]:
        params = lsp.ApplyWorkspaceEditParams(
            edit=edit, label=f"driveros: {_title(run.request.label)}"
        )
        return asyncio.wrap_future(self._server.workspace_apply_edit(params))

    def conflicts_kept(self, run: Run, conflicts: dict[str, str]) -> None:
        lines = "; ".join(f"{p}: {why}" for p, why in sorted(conflicts.items()))
        self._server.show(
            f"driveros run {run.run_id}: kept in the proposal, not applied: {lines}",
            lsp.MessageType.Warning,
        )
        self.send_proposal(run)

    def refused(self, run: Run, why: str, *, warn: bool) -> None:
        message = f"driveros run {run.run_id}: {why}"
        if warn:
            self._server.show(message, lsp.MessageType.Warning)
        else:
            self._server.log(message)

    # -- plumbing ----------------------------------------------------------------------
    def cancel_progress(self, token: str) -> str | None:
        """The run id a progress token belongs to (for window/workDoneProgress/cancel)."""
        if not token.startswith(PROGRESS_TOKEN_PREFIX):
            return None
        return token.removeprefix(PROGRESS_TOKEN_PREFIX).split("-", 1)[0]

    def spawn(self, coro: Any) -> None:
        """Run ``coro`` as a background task of the hub (canceled at server exit)."""
        self._spawn(coro)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        for run_id, channel in list(self._channels.items()):
            channel.cancel()
            self._cut[run_id] = channel  # a run canceled at exit still announces its end
        self._channels.clear()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.board.aclose()


def _title(task: str) -> str:
    line = " ".join(task.split())
    return line if len(line) <= 60 else line[:59] + "…"


def settled_result(run: Run, seq: int) -> Event:
    """The ``result`` event of a run whose agent never wrote one (it ended before the agent
    started, or the runner did not report): the outcome its settled state implies, in the
    agent's vocabulary (``driveros.agent.Outcome``)."""
    from driveros.agent import EXIT_CODES, Result

    reported = run.outcome.result if run.outcome is not None else None
    outcome = reported.outcome if reported is not None else None
    if run.state == "canceled":
        outcome = "canceled"
    elif run.state == "failed":  # the runner raised before the agent could say anything
        outcome = "setup_error"
    elif outcome not in EXIT_CODES:
        outcome = "answered"
    error = run.error if run.state == "failed" else reported.error if reported else None
    return Result(
        run_id=run.run_id,
        seq=seq,
        outcome=outcome,
        exit_code=EXIT_CODES[outcome],
        answer=reported.answer if reported is not None else "",
        error="canceled" if outcome == "canceled" else error,
        duration_ms=max(0.0, (time.time() - run.started_at) * 1000),
    )


def _end_message(run: Run) -> str:
    if run.state == "canceled":
        return "canceled"
    if run.state == "failed":
        return f"failed: {run.error}"
    result = run.outcome.result if run.outcome is not None else None
    outcome = (result.outcome if result is not None else None) or run.state
    files = len(run.pending)
    return f"{outcome}; {files} file{'' if files == 1 else 's'} proposed" if files else str(outcome)
