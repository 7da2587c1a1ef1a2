"""Iterating on a run from the editor: ``driveros.agent.followUp`` (a new turn on the same
run, allowed while it is proposed), ``driveros.agent.accept`` (the proposal up to a
checkpoint) and ``driveros.agent.revert`` (drop the checkpoints after one from the proposal).
docs/lsp-runs.md, "Commands in detail"."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pygls.exceptions import JsonRpcInvalidParams

from driveros_lsp.features.commands import RequestFailed, command
from driveros_lsp.protocol import CMD_AGENT_ACCEPT, CMD_AGENT_FOLLOW_UP, CMD_AGENT_REVERT

if TYPE_CHECKING:
    from driveros_lsp._runs import Run, RunManager
    from driveros_lsp._server import DriverosLanguageServer

T = TypeVar("T")


def _run(server: DriverosLanguageServer, run_id: str, *, proposed: bool = True) -> Run:
    from driveros_lsp._runs import RunError

    try:
        run = server.runs.get(run_id)
    except RunError as exc:
        raise JsonRpcInvalidParams(str(exc)) from exc
    if proposed and (run.state != "proposed" or run.outcome is None):
        raise RequestFailed(f"run {run.run_id} is {run.state}: there is no proposal")
    return run


def _manager(server: DriverosLanguageServer) -> RunManager:
    from driveros_lsp._runs import RunManager

    runs = server.runs
    if not isinstance(runs, RunManager):
        raise RequestFailed("this server's runs cannot be iterated on")
    return runs


def _scratch(run: Run) -> Any:
    state = run.outcome.state if run.outcome is not None else None
    scratch = state[1] if isinstance(state, tuple) and len(state) == 2 else None
    if scratch is None:
        raise RequestFailed(f"run {run.run_id} has no scratch copy to take checkpoints from")
    return scratch


async def _on_agent_loop(server: DriverosLanguageServer, work: Callable[[], Awaitable[T]]) -> T:
    """The scratch copy belongs to the agent loop: its checkpoints are read there."""

    async def step() -> T:
        return await work()

    result: T = await _manager(server)._agent.run(step())
    return result


async def _narrow(server: DriverosLanguageServer, run: Run, *, through: int, revert: bool) -> None:
    """Make the proposal the changes up to checkpoint ``through``: with ``revert`` the copy
    itself goes back there (the later checkpoints are dropped); otherwise only what the next
    review sends is narrowed (the copy keeps the later turns until the run is settled). The
    run's added folders follow its checkpoints by turn (``driveros.review.FolderViews``)."""
    from driveros.review import ReviewError, checkpoints_of

    scratch = _scratch(run)
    folders = run.outcome.folders if run.outcome is not None else None

    async def work() -> list[Any]:
        cps = checkpoints_of(scratch)
        turn = next((c.turn for c in cps.records if c.checkpoint == through), 0)
        if revert:
            await cps.revert(through)
            if folders:
                await folders.revert_to(turn)
            more = await folders.changes() if folders else []
            return [*await scratch.changes(), *more]
        more = await folders.changes_at(turn) if folders else []
        return [*await cps.changes(through=through), *more]

    try:
        changes = await _on_agent_loop(server, work)
    except ReviewError as exc:
        raise JsonRpcInvalidParams(str(exc)) from exc
    _manager(server).narrow(run, changes)


def checkpoint_list(run: Run) -> list[dict[str, Any]]:
    """The run's checkpoints as the wire shows them (``checkpoint``, ``turn``, ``files``)."""
    from driveros.review import checkpoints_of

    try:
        scratch = _scratch(run)
    except RequestFailed:
        return []
    return [
        {"checkpoint": c.checkpoint, "turn": c.turn, "files": c.files, "tools": c.tools}
        for c in checkpoints_of(scratch).records
    ]


def setup(server: DriverosLanguageServer) -> None:
    @command(server, CMD_AGENT_FOLLOW_UP)
    async def follow_up(ls: Any, *args: Any) -> dict[str, Any]:
        from driveros_lsp._params import FollowUpParams, parse
        from driveros_lsp._runs import RunError
        from driveros_lsp.protocol_models import RunStateResult

        p = parse(CMD_AGENT_FOLLOW_UP, FollowUpParams, args)
        run = _run(server, p.run_id)
        if run.in_flight:
            raise RequestFailed(f"run {run.run_id}: an edit is waiting for the editor's answer")
        try:
            _manager(server).resume(run, p.task)
        except RunError as exc:
            raise RequestFailed(str(exc)) from exc
        return RunStateResult(run_id=run.run_id, state=run.state).wire()

    @command(server, CMD_AGENT_ACCEPT)
    async def accept(ls: Any, *args: Any) -> dict[str, Any]:
        from driveros_lsp._params import AgentAcceptParams, parse
        from driveros_lsp.protocol_models import AcceptResult

        p = parse(CMD_AGENT_ACCEPT, AgentAcceptParams, args)
        run = _run(server, p.run_id)
        if p.through is not None:
            if run.in_flight:
                raise RequestFailed(f"run {run.run_id}: an edit is waiting for the editor")
            await _narrow(server, run, through=p.through, revert=False)
        plan = await server.hub.review(run, None)
        return AcceptResult(
            run_id=run.run_id,
            applying=plan.included,
            in_flight=plan.in_flight,
            conflicts=plan.conflicts,
        ).wire()

    @command(server, CMD_AGENT_REVERT)
    async def revert(ls: Any, *args: Any) -> dict[str, Any]:
        from driveros_lsp._params import RevertParams, parse
        from driveros_lsp.protocol_models import RunStateResult

        p = parse(CMD_AGENT_REVERT, RevertParams, args)
        run = _run(server, p.run_id)
        if run.in_flight:
            raise RequestFailed(f"run {run.run_id}: an edit is waiting for the editor's answer")
        await _narrow(server, run, through=p.to, revert=True)
        await _manager(server).reverted(run)
        return RunStateResult(run_id=run.run_id, state=run.state).wire()
