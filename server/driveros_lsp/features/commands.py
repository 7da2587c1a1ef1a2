"""workspace/executeCommand: start, fix, cancel, list, accept and reject runs.

Every command takes one object argument; bad params get a JSON-RPC InvalidParams error with a
message, a command that does not fit the run's state gets RequestFailed. start/fix return
``{runId}`` at once: the run is a background task owned by the RunManager.

Every handler is registered through :func:`command`, the one boundary where errors become
JSON-RPC errors: a ``DriverosError`` is RequestFailed with its message, any other exception is
logged (with its traceback, on stderr) and answered as RequestFailed with one line, so that no
traceback ever reaches the user.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from driveros_lsp._editor import document_lines
from driveros_lsp.features.documents import relative_path, snapshot
from driveros_lsp.protocol import (
    CMD_AGENT_CANCEL,
    CMD_AGENT_COMMAND,
    CMD_AGENT_FIX,
    CMD_AGENT_LIST,
    CMD_AGENT_START,
    CMD_REVIEW_ACCEPT,
    CMD_REVIEW_REJECT,
)

if TYPE_CHECKING:
    from pathlib import Path

    from driveros.conventions import Commands
    from driveros.diagnostics import DiagnosticItem, Severity
    from driveros_lsp._folders import TaskFolders
    from driveros_lsp._params import Diagnostic, RunRef, StartParams
    from driveros_lsp._runs import Run
    from driveros_lsp._server import DriverosLanguageServer
    from driveros_lsp._text import Lines, PositionCodec, SomeLines
    from driveros_lsp.protocol_models import CustomCommandInfo

logger = logging.getLogger(__name__)

# The run stack (_runs, _approval, protocol_models) is imported by the handlers, on the first
# command: nothing of it is needed before ``initialize`` is answered.

#: LSP 3.17 ``RequestFailed``: the request was valid but could not be carried out.
REQUEST_FAILED = -32803
_SEVERITY: dict[int, Severity] = {1: "error", 2: "warning", 3: "information", 4: "hint"}

F = TypeVar("F", bound=Callable[..., Any])


class RequestFailed(JsonRpcException):
    CODE = REQUEST_FAILED
    MESSAGE = "Request failed"


def as_request_failed(name: str, exc: Exception) -> JsonRpcException:
    """The JSON-RPC error a command answers for ``exc`` (never an internal error)."""
    from driveros import DriverosError

    if isinstance(exc, JsonRpcException):
        return exc
    if isinstance(exc, DriverosError):
        return RequestFailed(str(exc) or type(exc).__name__)
    logger.error("%s failed", name, exc_info=exc)
    detail = str(exc).strip().splitlines()
    return RequestFailed(f"{name} failed: {detail[0] if detail else type(exc).__name__}")


def command(server: DriverosLanguageServer, name: str) -> Callable[[F], F]:
    """``@server.command(name)`` with the error boundary of this module around the handler."""

    def register(fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any) -> Any:
                try:
                    return await fn(*args)
                except Exception as exc:
                    raise as_request_failed(name, exc) from exc
                except asyncio.CancelledError as exc:
                    task = asyncio.current_task()
                    if task is not None and task.cancelling():
                        raise  # this request is being canceled: pygls answers that
                    # a cancel that escaped from something the handler awaited: pygls would
                    # drop the answer (its executeCommand step only handles Exception)
                    logger.error("%s was interrupted", name, exc_info=exc)
                    raise RequestFailed(f"{name} was interrupted; try again") from exc

            server.command(name)(run_async)
        else:

            @functools.wraps(fn)
            def run_sync(*args: Any) -> Any:
                try:
                    return fn(*args)
                except Exception as exc:
                    raise as_request_failed(name, exc) from exc

            server.command(name)(run_sync)
        return fn

    return register


def _root(server: DriverosLanguageServer, uri: str | None = None) -> Path:
    try:
        return server.folder_of(uri)
    except LookupError as exc:
        raise RequestFailed(str(exc)) from exc


def _rel(server: DriverosLanguageServer, root: Path, uri: str) -> str:
    rel = relative_path(root, uri)
    if rel is None:
        raise JsonRpcInvalidParams(f"{uri} is not inside the workspace {root}")
    return rel


def _target(
    rel: str, d: Diagnostic, codec: PositionCodec, lines: Lines | SomeLines | None
) -> DiagnosticItem:
    """The editor's diagnostic as an item: its range in the client's code units, converted
    on the document to the item's code points."""
    from driveros.diagnostics import DiagnosticItem, to_one_based
    from driveros_lsp._text import Pos

    start, end = codec.range_from_client(
        lines,
        Pos(d.range.start.line, d.range.start.character),
        Pos(d.range.end.line, d.range.end.character),
    )
    span = to_one_based(start.line, start.character, end.line, end.character)
    return DiagnosticItem(
        path=rel,
        line=span.line,
        column=span.column,
        end_line=span.end_line,
        end_column=span.end_column,
        severity=_SEVERITY.get(d.severity or 1, "error"),
        code=None if d.code is None else str(d.code),
        source=d.source or "",
        message=d.message,
    )


def _fix_title(rel: str, items: list[DiagnosticItem], everything: bool) -> str:
    """A fix's name for the user: the file and its first diagnostic, not the prompt."""
    if everything or not items:
        return f"fix every problem in {rel}"
    first = " ".join(items[0].message.split())
    more = f" (+{len(items) - 1} more)" if len(items) > 1 else ""
    return f"fix {rel}:{items[0].line}: {first}{more}"


def _selection(server: DriverosLanguageServer, p: StartParams, rel: str) -> str:
    if p.range is None or p.uri is None:
        return ""
    doc = server.workspace.text_documents.get(p.uri)
    if doc is None:
        return f"\n\nFocus on {rel} lines {p.range.start.line + 1}-{p.range.end.line + 1}."
    from driveros_lsp._text import split_lines  # LSP's lines, not str.splitlines'

    lines = split_lines(doc.source)[p.range.start.line : p.range.end.line + 1]
    body = "\n".join(line.rstrip("\r\n") for line in lines)
    return (
        f"\n\nThe user selected {rel} lines {p.range.start.line + 1}-{p.range.end.line + 1}:"
        f"\n```\n{body}\n```"
    )


async def _task_folders(server: DriverosLanguageServer, p: StartParams) -> TaskFolders:
    """The folders a task runs in (``_folders.py``): named, the file's, or asked for."""
    from driveros_lsp._folders import TaskFolders, ask_folders, named_folders, workspace_folders
    from driveros_lsp._runs import RunError

    if p.folders is not None:
        try:
            return await named_folders(server, p.folders)
        except RunError as exc:  # a folder the client did not open: the params are wrong
            raise JsonRpcInvalidParams(str(exc)) from exc
    folders = workspace_folders(server)
    if p.uri is not None or len(folders) < 2:
        return TaskFolders(workspace=_root(server, p.uri))
    try:
        return await ask_folders(server, folders)
    except RunError as exc:
        raise RequestFailed(str(exc)) from exc


async def _launch(
    server: DriverosLanguageServer,
    root: Path,
    task: str,
    targets: list[dict[str, Any]],
    title: str,
    *,
    added: Sequence[Path] = (),
) -> dict[str, Any]:
    from driveros_lsp._approval import EditorAsker, effective_approval
    from driveros_lsp._buffers import EditorBuffers
    from driveros_lsp._runner import RunRequest
    from driveros_lsp._runs import RunError, new_run_id
    from driveros_lsp.protocol_models import StartResult

    settings = await server.current_settings()
    overlays = snapshot(server, root)
    asks = effective_approval(settings, server.traits) == "ask"
    request = RunRequest(
        run_id=new_run_id(),
        task=task,
        title=title,
        workspace=str(root),
        settings=settings,
        overlays=overlays,
        targets=targets,
        # named as the run names their files: by real path
        folders=await asyncio.to_thread(lambda: [str(f.resolve()) for f in added]),
        asker=EditorAsker(server, asyncio.get_running_loop()) if asks else None,
        buffers=EditorBuffers(server, asyncio.get_running_loop(), root),
    )
    try:
        run = server.runs.start(request, limit=settings.max_concurrent_runs)
    except RunError as exc:
        raise RequestFailed(str(exc)) from exc
    return StartResult(run_id=run.run_id).wire()


def _proposed(server: DriverosLanguageServer, ref: RunRef, paths: list[str] | None) -> Run:
    from driveros_lsp._runs import RunError

    try:
        run = server.runs.get(ref.run_id)
    except RunError as exc:
        raise JsonRpcInvalidParams(str(exc)) from exc
    if run.state != "proposed":
        raise RequestFailed(f"run {run.run_id} is {run.state}: there is no proposal to review")
    unknown = sorted(set(paths or ()) - set(run.pending))
    if unknown:
        raise JsonRpcInvalidParams(
            f"not in run {run.run_id}'s pending proposal: {', '.join(unknown)}"
        )
    return run


async def _custom_commands(server: DriverosLanguageServer, root: Path) -> Commands:
    """The user's commands and, when the workspace is trusted, its own (docs/extending.md)."""
    from driveros.conventions import load_commands, user_dir

    trusted = await server.trust.resolve(root)
    found = await asyncio.to_thread(load_commands, root, user_dir=user_dir(), trusted=trusted)
    for notice in found.notices:
        logger.warning("custom commands: %s", notice)
    return found


def _command_infos(found: Commands) -> list[CustomCommandInfo]:
    from driveros_lsp.protocol_models import CustomCommandInfo

    return [
        CustomCommandInfo(
            name=c.name,
            description=c.meta.description,
            argument_hint=c.meta.argument_hint,
            source=c.source,
        )
        for c in sorted(found.commands.values(), key=lambda c: c.name)
    ]


def setup(server: DriverosLanguageServer) -> None:
    @command(server, CMD_AGENT_START)
    async def start(ls: Any, *args: Any) -> dict[str, Any]:
        from driveros_lsp._params import StartParams, parse

        p = parse(CMD_AGENT_START, StartParams, args)
        chosen = await _task_folders(server, p)
        root = chosen.workspace
        task = p.task
        if p.uri is not None:
            rel = _rel(server, root, p.uri)
            task += f"\n\nThe user is looking at {rel}." + _selection(server, p, rel)
        return await _launch(server, root, task, [], p.task, added=chosen.added)

    @command(server, CMD_AGENT_FIX)
    async def fix(ls: Any, *args: Any) -> dict[str, Any]:
        from driveros_lsp._params import FixParams, parse

        p = parse(CMD_AGENT_FIX, FixParams, args)
        if not p.diagnostics and not p.all:
            raise JsonRpcInvalidParams(
                f"{CMD_AGENT_FIX}: give at least one diagnostic, or all: true"
            )
        root = _root(server, p.uri)  # in a multi-root workspace: the file's own folder
        rel = _rel(server, root, p.uri)
        from driveros.diagnostics import format_items
        from driveros_lsp._text import PositionCodec

        codec = PositionCodec(server.traits.encoding)
        wanted = {n for d in p.diagnostics for n in (d.range.start.line, d.range.end.line)}
        lines = await document_lines(server, p.uri, root / rel, wanted) if wanted else None
        items = [_target(rel, d, codec, lines) for d in p.diagnostics]
        listing = format_items(items, prefix="- ")
        targets = [i.model_dump() for i in items]
        if p.all:
            task = f"Fix every problem the project's checks report in {rel}."
            if listing:
                task += f"\nThe editor shows:\n{listing}"
        else:
            task = f"Fix this problem in {rel}:\n{listing}"
        return await _launch(server, root, task, targets, _fix_title(rel, items, p.all))

    @command(server, CMD_AGENT_COMMAND)
    async def custom_command(ls: Any, *args: Any) -> dict[str, Any]:
        from driveros_lsp._params import CommandParams, parse
        from driveros_lsp.protocol_models import CommandResult

        p = parse(CMD_AGENT_COMMAND, CommandParams, args)
        root = _root(server)
        found = await _custom_commands(server, root)
        if p.name is None:
            return CommandResult(run_id=None, commands=_command_infos(found)).wire()
        from driveros import ConfigError

        try:
            chosen = found.get(p.name)
        except ConfigError as exc:
            raise JsonRpcInvalidParams(str(exc)) from exc
        task = chosen.task(p.arguments)
        if not task:
            raise JsonRpcInvalidParams(f"custom command {chosen.name!r} has an empty body")
        shown = p.arguments if isinstance(p.arguments, str) else " ".join(p.arguments)
        started = await _launch(server, root, task, [], f"/{chosen.name} {shown}".strip())
        return CommandResult(run_id=started["runId"], commands=[]).wire()

    @command(server, CMD_AGENT_CANCEL)
    async def cancel(ls: Any, *args: Any) -> dict[str, Any]:
        from driveros_lsp._params import RunRef, parse
        from driveros_lsp._runs import RunError
        from driveros_lsp.protocol_models import RunStateResult

        p = parse(CMD_AGENT_CANCEL, RunRef, args)
        try:
            run = await server.runs.cancel(p.run_id)
        except RunError as exc:
            known = any(r.run_id == p.run_id for r in server.runs.runs())
            raise (RequestFailed if known else JsonRpcInvalidParams)(str(exc)) from exc
        return RunStateResult(run_id=run.run_id, state=run.state).wire()

    @command(server, CMD_AGENT_LIST)
    def list_runs(ls: Any, *args: Any) -> dict[str, Any]:
        from driveros_lsp._params import ListParams, parse
        from driveros_lsp.protocol_models import ListResult, run_summary

        parse(CMD_AGENT_LIST, ListParams, args)
        return ListResult(runs=[run_summary(r) for r in server.runs.runs()]).wire()

    @command(server, CMD_REVIEW_ACCEPT)
    async def accept(ls: Any, *args: Any) -> dict[str, Any]:
        from driveros_lsp._params import AcceptParams, parse
        from driveros_lsp.protocol_models import AcceptResult

        p = parse(CMD_REVIEW_ACCEPT, AcceptParams, args)
        run = _proposed(server, p, p.paths)
        plan = await server.hub.review(run, p.paths)
        return AcceptResult(
            run_id=run.run_id,
            applying=plan.included,
            in_flight=plan.in_flight,
            conflicts=plan.conflicts,
        ).wire()

    @command(server, CMD_REVIEW_REJECT)
    async def reject(ls: Any, *args: Any) -> dict[str, Any]:
        from driveros_lsp._params import RejectParams, parse
        from driveros_lsp.protocol_models import RunStateResult

        p = parse(CMD_REVIEW_REJECT, RejectParams, args)
        run = _proposed(server, p, p.paths)
        await server.runs.reject(run, p.paths, p.feedback)
        return RunStateResult(run_id=run.run_id, state=run.state).wire()

    tasks: set[asyncio.Task[Any]] = set()

    @server.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def progress_cancel(params: lsp.WorkDoneProgressCancelParams) -> None:
        from driveros_lsp._runs import RunError

        run_id = server.hub.cancel_progress(str(params.token))
        if run_id is None:
            return
        try:
            run = server.runs.get(run_id)
        except RunError:
            return
        if run.state == "running":
            task = asyncio.ensure_future(server.runs.cancel(run_id))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
