"""RunManager: the one owner of every agent run (an asyncio task each) and of its review state.

A run goes ``running`` -> ``proposed`` (its scratch copy has changes) or ``finished`` (none),
``failed`` (the runner raised) or ``canceled``. A proposal ends ``accepted`` or ``rejected``,
or goes back to ``running`` when rejected with feedback. Every field of a :class:`Run` is
written here, or by the :class:`~driveros_lsp._acceptance.Acceptance` pass of an accept (which
plans, sends through the run hub, and settles). The manager knows
nothing about LSP: it reports through a :class:`RunObserver`, which the run hub implements.

Each run's runner executes on the agent loop (:class:`~driveros_lsp._worker.AgentLoop`, a
worker thread) so that model streaming never queues in front of editor requests; the
bookkeeping, the observer calls and cancellation stay on the server loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from driveros_lsp._run import Run as Run
from driveros_lsp._run import RunError as RunError
from driveros_lsp._run import RunObserver as RunObserver
from driveros_lsp._run import Runs as Runs
from driveros_lsp._run import RunState as RunState
from driveros_lsp._run import Unobserved
from driveros_lsp._runner import Restorer
from driveros_lsp._worker import AgentLoop

if TYPE_CHECKING:
    from driveros_lsp._runner import Runner, RunOutcome, RunRequest

logger = logging.getLogger(__name__)

ACTIVE_STATES: frozenset[str] = frozenset({"running"})
#: How long cancel waits for a run's cleanup (sandbox teardown) before giving up on it.
CANCEL_GRACE_S = 20.0
#: How long server exit waits for scratch copies being released (bounded: the process's own
#: deadline is shorter still; what a kill leaves is collected by the next start).
RELEASE_GRACE_S = 15.0


def new_run_id() -> str:
    return os.urandom(6).hex()


class RunManager:
    """Starts, tracks, cancels and releases runs. One per server."""

    def __init__(
        self,
        runner_factory: Callable[[], Runner],
        observer: RunObserver | None = None,
        *,
        prepare: Callable[[RunRequest], Awaitable[RunRequest]] | None = None,
    ) -> None:
        self._runner_factory = runner_factory
        #: Completes each request as its run starts (workspace trust, which may ask the user).
        self._prepare = prepare
        self._runner: Runner | None = None
        self._observer: RunObserver = observer or Unobserved()
        self._runs: dict[str, Run] = {}
        self._closed = False
        self._agent = AgentLoop()
        #: Releases under way on the agent loop: server exit waits for every one of them.
        self._releasing: set[asyncio.Future[None]] = set()

    def observe(self, observer: RunObserver) -> None:
        """Report to ``observer`` from now on (the run hub, once the server is built)."""
        self._observer = observer

    @property
    def runner(self) -> Runner:
        if self._runner is None:
            self._runner = self._runner_factory()
        return self._runner

    def get(self, run_id: str) -> Run:
        run = self._runs.get(run_id)
        if run is None:
            raise RunError(f"unknown run {run_id!r}")
        return run

    def runs(self) -> list[Run]:
        return list(self._runs.values())

    def active_count(self) -> int:
        return sum(1 for r in self._runs.values() if r.state in ACTIVE_STATES)

    def start(self, request: RunRequest, *, limit: int) -> Run:
        """Register a run and start its task; returns at once."""
        if self._closed:
            raise RunError("the server is shutting down")
        if self.active_count() >= limit:
            raise RunError(
                f"{limit} runs are already active (setting maxConcurrentRuns); "
                "cancel one or wait for it to finish"
            )
        run = Run(run_id=request.run_id, request=request)
        self._runs[run.run_id] = run
        self._launch(run, resume=None, request=request)
        return run

    def resume(self, run: Run, feedback: str) -> None:
        """Continue a proposed run with ``feedback`` as the next user turn."""
        if run.state != "proposed" or run.outcome is None:
            raise RunError(f"run {run.run_id} is {run.state}; only a proposal can be resumed")
        request = run.request.model_copy(update={"task": feedback})
        previous = run.outcome
        run.state = "running"
        run.outcome = None
        run.pending = []
        run.conflicts = []
        self._launch(run, resume=previous, request=request)

    def _launch(self, run: Run, *, resume: RunOutcome | None, request: RunRequest) -> None:
        run.epoch += 1
        self._observer.run_started(run)
        run.task = asyncio.create_task(
            self._drive(run, request, resume), name=f"driveros-run-{run.run_id}"
        )

    async def _drive(self, run: Run, request: RunRequest, resume: RunOutcome | None) -> None:
        """On the server loop: run the runner on the agent loop, then record its outcome."""
        if self._prepare is not None:
            try:
                request = await self._prepare(request)
            except asyncio.CancelledError:
                run.state = "canceled"
                self._observer.run_finished(run)
                raise
        loop = asyncio.get_running_loop()
        finished: asyncio.Future[RunOutcome] = loop.create_future()
        runner = self.runner

        def on_event(event: Any) -> None:  # called on the agent loop
            loop.call_soon_threadsafe(self._observer.run_event, run, event)

        def settle(outcome: RunOutcome | None, error: BaseException | None) -> None:
            if finished.done():
                return
            if isinstance(error, asyncio.CancelledError):
                finished.cancel()
            elif error is not None:
                finished.set_exception(error)
            else:
                assert outcome is not None
                finished.set_result(outcome)

        async def execute() -> None:  # on the agent loop
            try:
                outcome = await runner(request, on_event=on_event, resume=resume)
            except BaseException as exc:
                loop.call_soon_threadsafe(settle, None, exc)
                if not isinstance(exc, Exception):
                    raise
                return
            loop.call_soon_threadsafe(settle, outcome, None)

        holder: dict[str, asyncio.Task[None]] = {}
        self._agent.spawn(execute(), holder)
        try:
            await asyncio.wait({finished})
        except asyncio.CancelledError:
            self._agent.call(lambda: holder["task"].cancel())
            await asyncio.wait({finished}, timeout=CANCEL_GRACE_S)
            run.state = "canceled"
            run.outcome = run.outcome or _without_changes(resume)  # its copy is still ours
            self._observer.run_finished(run)
            raise
        if finished.cancelled():
            run.state = "canceled"
            run.outcome = run.outcome or _without_changes(resume)
            self._observer.run_finished(run)
            return
        error = finished.exception()
        if error is not None:  # the runner's failure ends this run, never the server
            logger.error("run %s failed", run.run_id, exc_info=error)
            run.outcome = run.outcome or _without_changes(resume)
            run.state = "failed"
            run.error = f"{type(error).__name__}: {error}"
            self._observer.run_finished(run)
            return
        outcome = finished.result()
        run.outcome = outcome
        run.pending = [_change_path(c) for c in outcome.changes]
        if run.pending:  # kept on disk before anyone hears of the proposal
            keeping = asyncio.ensure_future(self._keep(run))
            try:
                await asyncio.shield(keeping)
            except asyncio.CancelledError:
                run.state = "canceled"
                self._observer.run_finished(run)
                raise
        run.state = "proposed" if run.pending else "finished"
        self._observer.run_finished(run)
        if run.state == "finished":
            await self.release(run)

    async def cancel(self, run_id: str) -> Run:
        """Stop a running run (and wait for its cleanup), or discard a proposal."""
        run = self.get(run_id)
        if run.state == "running" and run.task is not None:
            await self._cancel_task(run.task)
            return run
        if run.state == "proposed":
            run.state = "canceled"
            run.pending = []
            await self.release(run)
            self._observer.run_finished(run)
            return run
        raise RunError(f"run {run_id} is already {run.state}")

    @staticmethod
    async def _cancel_task(task: asyncio.Task[None]) -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), CANCEL_GRACE_S)

    async def release(self, run: Run) -> None:
        """Free the run's scratch copy (idempotent).

        The release runs on the agent loop to its end even when the caller is canceled;
        :meth:`aclose` waits for every release still under way.
        """
        outcome = run.outcome
        if outcome is None or outcome.release is None:
            return
        release, run.outcome = outcome.release, outcome.model_copy(update={"release": None})
        await self._to_the_end(release, f"releasing run {run.run_id}")

    async def let_go(self, run: Run) -> None:
        """Unmount a kept proposal's scratch view at exit: its changes stay on disk and the
        next server mounts it again (nothing over the workspace stays mounted meanwhile)."""
        outcome = run.outcome
        if outcome is None or outcome.let_go is None:
            return
        let_go, run.outcome = outcome.let_go, outcome.model_copy(update={"let_go": None})
        await self._to_the_end(let_go, f"unmounting the kept run {run.run_id}")

    async def _to_the_end(self, step: Callable[[], Awaitable[None]], what: str) -> None:
        """Run ``step`` (on the scratch copy) on the agent loop to its end even when the
        caller is canceled; :meth:`aclose` waits for it. A failure is logged."""

        async def on_agent_loop() -> None:  # the scratch copy belongs to the agent loop
            await step()

        done = asyncio.wrap_future(self._agent.submit(on_agent_loop()))
        self._releasing.add(done)
        done.add_done_callback(self._releasing.discard)
        try:
            await asyncio.shield(done)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("%s failed", what)

    def _manifest(self, run: Run) -> dict[str, Any]:
        return {
            "runId": run.run_id,
            "task": run.request.task,
            "title": run.request.label,
            "startedAt": run.started_at,
            "outcome": run.outcome.result.outcome if run.outcome is not None else None,
            "rationale": run.outcome.rationale if run.outcome is not None else "",
            "pending": list(run.pending),
            "conflicts": list(run.conflicts),
        }

    async def keep(self, run: Run) -> None:
        """Keep a proposal's scratch copy past this process (or refresh its manifest)."""
        if run.state == "proposed":
            await self._keep(run)

    async def _keep(self, run: Run) -> None:
        outcome = run.outcome
        if outcome is None or outcome.keep is None:
            return
        keep, manifest = outcome.keep, self._manifest(run)

        async def on_agent_loop() -> None:  # the scratch copy belongs to the agent loop
            await keep(manifest)

        try:
            await self._agent.run(on_agent_loop())
        except Exception:
            logger.exception("keeping run %s for a restart failed", run.run_id)
            return
        run.kept = True

    async def restore(self, request: Callable[[str, str], RunRequest]) -> list[Run]:
        """Reopen the proposals earlier servers kept for this workspace: each becomes a
        ``proposed`` run with ``restored`` set. ``request(run_id, task)`` builds its request."""
        runner = self.runner
        if not isinstance(runner, Restorer) or self._closed:
            return []
        restore = runner.restore
        workspace = request("", "").workspace
        try:
            found = await self._agent.run(restore(workspace))
        except Exception:
            logger.exception("reopening kept proposals failed")
            return []
        runs: list[Run] = []
        for item in found:
            manifest = item.manifest
            run_id = str(manifest.get("runId") or new_run_id())
            if run_id in self._runs:
                continue
            paths = [_change_path(c) for c in item.outcome.changes]
            wanted = manifest.get("pending")
            pending = [p for p in paths if not isinstance(wanted, list) or p in wanted]
            started = manifest.get("startedAt")
            listed = manifest.get("folders")
            folders = [str(f) for f in listed] if isinstance(listed, list) else []
            conflicts = manifest.get("conflicts")
            run = Run(
                run_id=run_id,
                request=request(run_id, str(manifest.get("task") or "")).model_copy(
                    update={"title": str(manifest.get("title") or ""), "folders": folders}
                ),
                state="proposed" if pending else "finished",
                started_at=float(started) if isinstance(started, int | float) else item.kept_at,
                outcome=item.outcome,
                pending=pending,
                conflicts=[p for p in conflicts or () if p in pending]
                if isinstance(conflicts, list)
                else [],
                kept=True,
                restored=True,
            )
            self._runs[run_id] = run
            if run.state == "finished":  # nothing left to review: gone for good
                await self.release(run)
            else:
                runs.append(run)
        return runs

    # -- the review of a proposal (an accept is an _acceptance.Acceptance pass) -------
    def narrow(self, run: Run, changes: Sequence[Any]) -> None:
        """The proposal is now ``changes`` (a checkpoint's, ``driveros.agent.accept`` through
        N or ``revert``): what is pending follows, and earlier conflicts are recomputed."""
        assert run.outcome is not None
        run.outcome = run.outcome.model_copy(update={"changes": list(changes)})
        run.pending = [c.path for c in changes]
        run.conflicts = []

    async def reverted(self, run: Run) -> None:
        """After ``revert``: nothing left is rejected (the copy released), the rest kept."""
        if not run.pending:
            run.state = "rejected"
            await self.release(run)
        elif run.kept:
            await self.keep(run)
        self._observer.proposal_changed(run)

    async def reject(self, run: Run, paths: Sequence[str] | None, feedback: str | None) -> None:
        """Reject ``paths`` (default: the whole proposal); with ``feedback`` the run goes on
        with it as the next user turn instead."""
        asked = paths if paths is not None else run.pending
        busy = sorted(p for p in asked if p in run.in_flight)
        if busy:
            raise RunError(
                f"run {run.run_id}: the edit of {', '.join(busy)} is waiting for the editor's "
                "answer; confirm or dismiss it first"
            )
        if feedback:
            self.resume(run, feedback)
            return
        run.pending = [p for p in run.pending if paths is not None and p not in paths]
        if not run.pending:
            run.state = "rejected"
            await self.release(run)
        elif run.kept:
            await self.keep(run)
        self._observer.proposal_changed(run)

    async def aclose(self) -> None:
        """Cancel every running run and release every proposal (server exit), bounded.

        A kept proposal (see :meth:`keep`) is left on disk for the next server, unmounted.

        Idempotent. Every run task is awaited (up to :data:`CANCEL_GRACE_S` each, at once) and
        every scratch copy release, including those started before, is awaited (up to
        :data:`RELEASE_GRACE_S`) before the agent loop stops, so nothing is left pending.
        """
        self._closed = True
        live = [(r, r.task) for r in self._runs.values() if r.task and not r.task.done()]
        await asyncio.gather(*(self._cancel_task(t) for r, t in live if r.state == "running"))
        # a run that just ended is only finishing its bookkeeping (keeping its proposal)
        ending = {t for r, t in live if r.state != "running"}
        if ending:
            await asyncio.wait(ending, timeout=CANCEL_GRACE_S)
        await asyncio.gather(
            *(
                self.let_go(run) if run.kept and run.state == "proposed" else self.release(run)
                for run in self._runs.values()
            ),
            return_exceptions=True,
        )
        if self._releasing:
            _, late = await asyncio.wait(set(self._releasing), timeout=RELEASE_GRACE_S)
            if late:
                logger.warning("%d scratch copies were still being released at exit", len(late))
        await self._agent.aclose()


def _without_changes(outcome: RunOutcome | None) -> RunOutcome | None:
    """A resumed run's previous outcome, kept only so that its scratch copy is released."""
    return None if outcome is None else outcome.model_copy(update={"changes": ()})


def _change_path(change: Any) -> str:
    return str(change.path)
