"""The ACP agent: sessions, prompts as driveros runs, cancellation, modes, replay."""

from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, schema
from acp.interfaces import Client

from driveros import __version__
from driveros._errors import DriverosError
from driveros._paths import user_home
from driveros._unicode import printable
from driveros.acp import _store as store
from driveros.acp._checkpoints import ClientFiles
from driveros.acp._commands import Announcer, expand_prompt, tell_commands
from driveros.acp._edits import EditGate, deliver_edits, feedback_prompt, proposed
from driveros.acp._modes import APPROVE, MODE_IDS, mode_state
from driveros.acp._permission import AcpAsker
from driveros.acp._plan import RunPlan
from driveros.acp._reads import inside as _inside
from driveros.acp._reads import overlay_path as _overlay_path
from driveros.acp._reads import read_problem, relative
from driveros.acp._session import Session, StopReason
from driveros.acp._settings import Settings, mcp_configs
from driveros.acp._updates import Update, UpdateStream, text_block
from driveros.agent import EXIT_CODES
from driveros.config import Environment, load_environment
from driveros.mcptools import open_mcp_tools
from driveros.runs import RunContext, RunReport, execute_run
from driveros.trust import broad_root

log = logging.getLogger(__name__)

_STOP: dict[str, StopReason] = {
    "canceled": "cancelled",
    "refused": "refusal",
    "resource_cap": "max_turn_requests",
}


class DriverosAgent:
    """Implements the agent side of ACP v1 over :func:`driveros.runs.execute_run`."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self._conn: Client | None = None
        self._fs_read = False
        self._fs_write = False
        self._sessions: dict[str, Session] = {}
        self._input_closed = False
        self._commands = Announcer()

    def _loader(self, root: Path) -> Environment:
        """The configuration of a workspace (the injected loader in tests)."""
        if self.settings.environment is not None:
            return self.settings.environment(root)
        return load_environment(cwd=root)

    # -- connection ----------------------------------------------------------------------

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    @property
    def conn(self) -> Client:
        if self._conn is None:
            raise RequestError.internal_error({"details": "not connected"})
        return self._conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: schema.ClientCapabilities | None = None,
        client_info: schema.Implementation | None = None,
        **kwargs: Any,
    ) -> schema.InitializeResponse:
        fs = client_capabilities.fs if client_capabilities is not None else None
        self._fs_read = bool(fs and fs.read_text_file)
        self._fs_write = bool(fs and fs.write_text_file)
        return schema.InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                prompt_capabilities=schema.PromptCapabilities(
                    image=False, audio=False, embedded_context=True
                ),
                mcp_capabilities=schema.McpCapabilities(http=True, sse=False),
            ),
            auth_methods=[],
            agent_info=schema.Implementation(
                name="driveros", title="driveros", version=__version__
            ),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None

    # -- sessions ------------------------------------------------------------------------

    def _session(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "details": "unknown session"}
            )
        return session

    @staticmethod
    async def _workspace(cwd: str) -> Path:
        root = Path(cwd)
        if not root.is_absolute():
            raise RequestError.invalid_params({"cwd": cwd, "details": "cwd must be absolute"})
        resolved = await asyncio.to_thread(root.resolve)
        if not await asyncio.to_thread(resolved.is_dir):
            raise RequestError.invalid_params({"cwd": cwd, "details": "not a directory"})
        # A prompt there would scratch-copy every project below it: the rule of `driveros trust`.
        broad = broad_root(resolved, user_home())
        if broad is not None:
            details = f"refusing a session in {resolved}: {broad}; open a project directory"
            raise RequestError.invalid_params({"cwd": cwd, "details": details})
        return resolved

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> schema.NewSessionResponse:
        root = await self._workspace(cwd)
        session = Session(
            id=uuid.uuid4().hex,
            cwd=root,
            mode=self.settings.mode,
            mcp=[*self.settings.mcp_servers, *mcp_configs(mcp_servers or [])],
        )
        self._sessions[session.id] = session
        await self._keep(session)
        self._commands.announce(
            root, self._loader, lambda u: self.conn.session_update(session_id=session.id, update=u)
        )
        return schema.NewSessionResponse(session_id=session.id, modes=mode_state(session.mode))

    async def _keep(self, session: Session) -> None:
        """Keep the session for a later process's session/load (acp._store)."""
        await store.save(
            session.id,
            cwd=session.cwd,
            mode=session.mode,
            updates=session.updates,
            history=session.history,
            feedback=session.feedback,
            edits=session.edits,
        )

    async def _restore(self, session_id: str, cwd: str, mcp_servers: list[Any]) -> Session:
        """A session an earlier ``driveros acp`` kept (with the MCP servers this load names)."""
        root = await self._workspace(cwd)
        kept = await store.load(session_id, root)
        if kept is None:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "details": "unknown session"}
            )
        stored, updates, history = kept
        session = Session(
            id=session_id,
            cwd=root,
            mode=stored.mode,
            history=history,
            updates=updates,
            feedback=list(stored.feedback),
            edits=stored.edits,
            mcp=[*self.settings.mcp_servers, *mcp_configs(mcp_servers)],
        )
        self._sessions[session.id] = session
        return session

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> schema.LoadSessionResponse:
        session = self._sessions.get(session_id)
        if session is None:
            session = await self._restore(session_id, cwd, mcp_servers or [])
        elif await self._workspace(cwd) != session.cwd:  # another workspace's session
            raise RequestError.invalid_params(
                {"sessionId": session_id, "details": "unknown session"}
            )
        for update in list(session.updates):
            await self.conn.session_update(session_id=session.id, update=update)
        self._commands.announce(
            session.cwd,
            self._loader,
            lambda u: self.conn.session_update(session_id=session.id, update=u),
        )
        return schema.LoadSessionResponse(modes=mode_state(session.mode))

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> schema.SetSessionModeResponse:
        session = self._session(session_id)
        if mode_id not in MODE_IDS:
            raise RequestError.invalid_params({"modeId": mode_id, "details": "unknown mode"})
        session.mode = mode_id
        update = schema.CurrentModeUpdate(
            session_update="current_mode_update", current_mode_id=mode_id
        )
        session.updates.append(update)
        await self.conn.session_update(session_id=session.id, update=update)
        await self._keep(session)
        return schema.SetSessionModeResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is None or session.task is None or session.task.done():
            return
        session.cancel_requested = True
        session.task.cancel()

    async def aclose(self) -> None:
        """Close every session's held proposal (the connection ended)."""
        await asyncio.gather(*(s.proposal.aclose() for s in self._sessions.values()))

    async def input_closed(self) -> None:
        """The client closed stdin: no answer to a permission request can come any more.
        Every running prompt is canceled as ``session/cancel`` would, and a prompt read
        before the end but not started yet answers ``cancelled`` at once."""
        self._input_closed = True
        for session_id in list(self._sessions):
            await self.cancel(session_id)

    # -- prompts -------------------------------------------------------------------------

    async def prompt(
        self, session_id: str, prompt: list[Any], **kwargs: Any
    ) -> schema.PromptResponse:
        session = self._session(session_id)
        if session.task is not None and not session.task.done():
            raise RequestError.invalid_request({"details": "a prompt is already running"})
        if self._input_closed:
            return schema.PromptResponse(stop_reason="cancelled")
        session.cancel_requested = False
        task = asyncio.create_task(self._turn(session, prompt))
        session.task = task
        try:
            stop = await task
        except asyncio.CancelledError:
            if not session.cancel_requested:
                raise  # the connection went away
            stop = "cancelled"
        except DriverosError as exc:  # setup (configuration, MCP config): one line, no trace
            raise RequestError.internal_error({"details": printable(str(exc))}) from None
        except RequestError:
            raise
        except Exception as exc:  # a bug: one line for the client, the traceback with -v
            log.debug("prompt failed", exc_info=True)
            detail = f"internal error ({type(exc).__name__}: {exc})"
            raise RequestError.internal_error({"details": printable(detail)}) from None
        finally:
            session.task = None
        await self._keep(session)
        return schema.PromptResponse(stop_reason=stop)

    async def _read_client(self, session: Session, path: str) -> str | None:
        """The editor's text of ``path``, asked only when the sandbox's path checks pass
        (acp._reads.read_problem; None, the disk counts, when they do not)."""
        rel = relative(session.cwd, path)
        problem = (
            "outside the workspace"
            if rel is None
            else await asyncio.to_thread(read_problem, session.cwd, rel)
        )
        if problem is not None:
            log.info("not asking the editor for %s: %s", path, problem)
            return None
        response = await self.conn.read_text_file(session_id=session.id, path=path)
        return response.content

    async def _read_buffer(self, session: Session, rel: str) -> str | None:
        """The client's text of a workspace file the agent is about to touch (None: keep the
        disk's): read through ``fs/read_text_file``, refused like an embedded resource when
        it could not be an overlay (outside, ``.git``, a link, not valid Unicode)."""
        path = session.cwd / rel
        text = await self._read_client(session, str(path))
        return text if await _overlay_path(session.cwd, path.as_uri(), text) else None

    async def _write_client(self, session: Session, path: str, content: str) -> None:
        await self.conn.write_text_file(session_id=session.id, path=path, content=content)
        rel = _inside(session.cwd, Path(path).as_uri())
        if rel is not None:
            session.client_files.add(rel)

    async def _buffers(self, session: Session, overlays: dict[str, str]) -> None:
        """Add the client's buffers of the files it has (``client_files``) to ``overlays``."""
        if not self._fs_read:
            return
        for rel in sorted(session.client_files - overlays.keys()):
            path = session.cwd / rel
            try:
                buffer = await self._read_client(session, str(path))
            except Exception as exc:  # closed, deleted, or the client failed: the disk counts
                log.info("fs/read_text_file %s failed: %s", rel, exc)
                continue
            if buffer is not None and await _overlay_path(session.cwd, path.as_uri(), buffer):
                overlays[rel] = buffer

    async def _task_text(self, session: Session, blocks: list[Any]) -> tuple[str, dict[str, str]]:
        """The task and the unsaved buffers it carries (workspace-relative path -> text)."""
        parts: list[str] = []
        overlays: dict[str, str] = {}
        for block in blocks:
            if isinstance(block, schema.TextContentBlock):
                parts.append(block.text)
            elif isinstance(block, schema.EmbeddedResourceContentBlock):
                res = block.resource
                if isinstance(res, schema.TextResourceContents):
                    rel = await _overlay_path(session.cwd, res.uri, res.text)
                    if rel is not None:
                        overlays[rel] = res.text
                        parts.append(f"\n[the user attached {rel}; read it with read_file]")
                    else:
                        parts.append(f"\n<context uri={res.uri!r}>\n{res.text}\n</context>")
            elif isinstance(block, schema.ResourceContentBlock):
                rel = _inside(session.cwd, block.uri)
                if rel is not None and self._fs_read:
                    try:
                        buffer = await self._read_client(session, str(session.cwd / rel))
                        if (
                            buffer is not None
                            and await _overlay_path(session.cwd, block.uri, buffer) is not None
                        ):
                            overlays[rel] = buffer
                    except Exception as exc:  # a client failure leaves the disk version
                        log.info("fs/read_text_file %s failed: %s", rel, exc)
                if rel is not None:
                    parts.append(f"\n[the user points at {rel}]")
                else:
                    parts.append(f"\n[the user points at {block.uri}]")
        session.client_files.update(overlays)
        await self._buffers(session, overlays)
        return printable("".join(parts)), overlays

    async def _turn(self, session: Session, blocks: list[Any]) -> StopReason:
        text, overlays = await self._task_text(session, blocks)
        user = schema.UserMessageChunk(
            session_update="user_message_chunk", content=text_block(text)
        )
        session.updates.append(user)

        async def send(update: Update) -> None:
            await self.conn.session_update(session_id=session.id, update=update)

        stream = UpdateStream(send, workspace=session.cwd, history=session.updates)
        if not text.strip():
            await stream.emit(
                schema.AgentMessageChunk(
                    session_update="agent_message_chunk", content=text_block("(empty prompt)")
                )
            )
            return "end_turn"
        files = ClientFiles(
            read=(lambda p: self._read_client(session, p)) if self._fs_read else None,
            write=(lambda p, c: self._write_client(session, p, c)) if self._fs_write else None,
        )
        answer = await session.proposal.answer(text, files)
        if answer is not None:  # a session command: no model request
            reply = text_block(answer)
            await stream.emit(
                schema.AgentMessageChunk(session_update="agent_message_chunk", content=reply)
            )
            return "end_turn"
        await session.proposal.aclose()  # this prompt's proposal replaces the last one
        task = feedback_prompt(session.feedback) + await expand_prompt(
            text, session.cwd, self._loader
        )
        session.feedback = []
        plan = RunPlan(stream.emit)
        await plan.started()
        try:
            report = await self._run(session, task, overlays, stream)
        except asyncio.CancelledError:
            await stream.close()
            await stream.fail_open_calls("cancelled")
            raise
        result = report.result
        await stream.close()
        try:
            reviewing = report.scratch is not None and result.outcome != "canceled"
            await plan.finished(proposed(report.changes) if reviewing else [], result.outcome)
            if report.scratch is not None and report.changes and result.outcome != "canceled":
                gate = EditGate(
                    emit=stream.emit,
                    ask=lambda call, options: self.conn.request_permission(
                        session_id=session.id, tool_call=call, options=options
                    ),
                    read=files.read,
                    write=files.write,
                    always=session.edits,
                    plan=plan,
                    settled=lambda paths, written, note: stream.settle_edits(
                        paths, written=written, note=note
                    ),
                )
                try:
                    session.feedback = await deliver_edits(gate, report.scratch, report.changes)
                finally:
                    session.edits = gate.always
        finally:
            await stream.settle_unreviewed_edits("not proposed: the user's file is unchanged")
            await session.proposal.hold(report.scratch, result, session.cwd)
        if session.proposal.checkpoints and not session.commands_told:  # /revert applies now
            session.commands_told = True
            await tell_commands(
                session.cwd,
                self._loader,
                lambda u: self.conn.session_update(session_id=session.id, update=u),
            )
        if result.exit_code == EXIT_CODES["setup_error"] or result.outcome == "provider_error":
            await stream.emit(
                schema.AgentMessageChunk(
                    session_update="agent_message_chunk",
                    content=text_block(f"\n\ndriveros: {result.outcome}: {result.error or ''}"),
                )
            )
        return _STOP.get(result.outcome, "end_turn")

    async def _run(
        self, session: Session, task: str, overlays: dict[str, str], stream: UpdateStream
    ) -> RunReport:
        s = self.settings
        env = await asyncio.to_thread(self._loader, session.cwd)
        for warning in env.warnings:
            log.warning("%s", warning)
        # the settings are the run options (driveros.runs.HeadlessOptions) plus ACP's own
        spec = s.spec(
            task=task,
            workspace=session.cwd,
            approve=APPROVE[session.mode],
            review=True,
            overlays=overlays,
            diagnostics=s.diagnostics and env.diagnostics_on,
            workspace_trusted=env.workspace_trusted,
        )
        asker = AcpAsker(
            lambda call, options: self.conn.request_permission(
                session_id=session.id, tool_call=call, options=options
            ),
            stream=stream,
            workspace=session.cwd,
        )
        asker.rejecting = session.rejecting_commands
        problems: list[str] = []
        try:
            async with open_mcp_tools(
                session.mcp, report=problems.append, cwd=str(session.cwd)
            ) as tools:
                for problem in problems:
                    await stream.emit(
                        schema.AgentMessageChunk(
                            session_update="agent_message_chunk",
                            content=text_block(f"driveros: {printable(problem)}\n\n"),
                        )
                    )
                report = await execute_run(
                    spec,
                    env=env,
                    on_event=stream.on_event,
                    context=RunContext(
                        history=session.history or None,
                        asker=asker,
                        extra_tools=tools,
                        buffers=(lambda rel: self._read_buffer(session, rel))
                        if self._fs_read
                        else None,
                    ),
                )
        finally:
            session.rejecting_commands = asker.rejecting
        if report.history:
            session.history = list(report.history)
        return report
