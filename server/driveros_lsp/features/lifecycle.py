"""initialize (settings, client traits), initialized (proposals kept by an earlier server are
reopened and announced), shutdown and exit (every run canceled)."""

from __future__ import annotations

import asyncio
import importlib
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from driveros_lsp._approval import ask_problem
from driveros_lsp._editor import ClientTraits

if TYPE_CHECKING:
    from driveros_lsp._server import DriverosLanguageServer

logger = logging.getLogger(__name__)


def setup(server: DriverosLanguageServer) -> None:
    @server.feature(lsp.INITIALIZE)
    def initialize(params: lsp.InitializeParams) -> None:
        encoding = server.workspace.position_encoding
        value = (
            encoding.value if isinstance(encoding, lsp.PositionEncodingKind) else encoding
        ) or "utf-16"
        info = params.client_info
        server.traits = ClientTraits.from_capabilities(
            params.capabilities, str(value), info.name if info is not None else None
        )
        options = params.initialization_options
        # Settings are parsed once initialize is answered: validating them needs pydantic,
        # which is imported off the loop so that initialize stays as fast as a bare server.
        server.settings_task = asyncio.ensure_future(load_settings(server, options))

    @server.feature(lsp.INITIALIZED)
    def initialized(params: lsp.InitializedParams) -> None:
        server.hub.spawn(restore_proposals(server))

    @server.feature(lsp.SHUTDOWN)
    async def shutdown(params: None) -> None:
        await stop_everything(server)

    @server.feature(lsp.EXIT)
    async def exit_(params: None) -> None:
        await stop_everything(server)


async def load_settings(server: DriverosLanguageServer, options: Any) -> None:
    await asyncio.to_thread(importlib.import_module, "driveros_lsp._settings")
    from driveros_lsp._settings import parse_settings

    if server._settings is not None:  # didChangeConfiguration came first: it wins
        return
    settings, problems = parse_settings(options)
    server.settings = settings
    problems += ask_problems(server, options)
    if problems:
        report_settings_problems(server, problems)


def ask_problems(server: DriverosLanguageServer, raw: Any) -> list[str]:
    """The "approval ask needs message actions" warning, once per session."""
    if server.ask_warned:
        return []
    problem = ask_problem(raw, server.settings, server.traits)
    if problem is None:
        return []
    server.ask_warned = True
    return [problem]


def report_settings_problems(server: DriverosLanguageServer, problems: list[str]) -> None:
    """Tell the user which settings were ignored (they fell back to their defaults)."""
    text = "driveros: invalid settings replaced by defaults: " + "; ".join(problems)
    logger.warning("%s", text)
    server.show(text, lsp.MessageType.Warning)


async def restore_proposals(server: DriverosLanguageServer) -> None:
    """Reopen the proposals an earlier server kept for this workspace and tell the user."""
    try:
        root = server.workspace_root()
    except LookupError:
        return
    settings = await server.current_settings()
    from driveros_lsp._buffers import EditorBuffers
    from driveros_lsp._runner import RunRequest

    buffers = EditorBuffers(server, asyncio.get_running_loop(), root)

    def request(run_id: str, task: str) -> RunRequest:
        return RunRequest(
            run_id=run_id, task=task, workspace=str(root), settings=settings, buffers=buffers
        )

    runs = await server.runs.restore(request)
    for run in runs:
        server.hub.send_proposal(run)
    if runs:
        tasks = "; ".join(f"{r.run_id}: {_short(r.request.label)}" for r in runs)
        server.show(
            f"driveros: {len(runs)} proposal(s) from an earlier session are waiting for review "
            f"({tasks}). Accept or reject them, or list them with driveros.agent.list.",
            lsp.MessageType.Info,
        )


def _short(task: str) -> str:
    line = " ".join(task.split())
    return line if len(line) <= 72 else line[:71] + "…"


async def stop_everything(server: DriverosLanguageServer) -> None:
    """Cancel every run (model stream, tools, sandbox) and free every scratch copy.

    The hub goes first (edits awaiting an answer, trace channels): the run manager then
    waits, bounded, for every run task and every scratch copy release, including releases
    the hub started, before the agent loop stops. Idempotent (shutdown, exit, end of input).
    """
    await server.hub.aclose()
    await server.runs.aclose()
