"""The run's events as ACP ``session/update`` notifications, deltas coalesced.

Text and thinking deltas are buffered and sent at most every :data:`FLUSH_INTERVAL` seconds
(about 20 updates a second, as the language server does); any other update flushes them
first, so the client sees everything in the order the run produced it. Every update sent is
also recorded, so ``session/load`` can replay the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import posixpath
import re
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from acp import schema

from driveros.agent import Event, ToolLocation
from driveros.approval import display_command

log = logging.getLogger(__name__)

#: Seconds between two flushes of buffered text/thinking deltas (~20 updates/s).
FLUSH_INTERVAL = 0.05
#: Characters of a tool's output shown in the tool call (the full output stays in rawOutput).
SHOWN_OUTPUT = 4000

Update = (
    schema.UserMessageChunk
    | schema.AgentMessageChunk
    | schema.AgentThoughtChunk
    | schema.ToolCallStart
    | schema.ToolCallProgress
    | schema.CurrentModeUpdate
    | schema.AgentPlanUpdate
)
Send = Callable[[Update], Awaitable[None]]

_KINDS: dict[str, schema.ToolKind] = {
    "read_file": "read",
    "list_files": "search",
    "search": "search",
    "diagnostics": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "run": "execute",
    "definition": "search",
    "references": "search",
    "symbols": "search",
    "hover": "read",
    "rename": "edit",
}
#: The language-server tools: titled by the symbol they ask about; the places their answer
#: names (``path:line:column: ...`` lines) become the update's locations.
_SEMANTIC_TITLES = {
    "definition": "definition of",
    "references": "references to",
    "hover": "hover",
    "rename": "rename",
    "symbols": "symbols",
}
_PLACE = re.compile(r"^([^\s:][^:\n]*):(\d+)(?::\d+)?: ", re.MULTILINE)
#: Places listed as locations of one result at most.
MAX_RESULT_LOCATIONS = 50


#: The model's edit tools: on the run's private copy, so pending until the user decides.
EDIT_TOOLS = frozenset({"write_file", "edit_file"})


def new_call_id() -> str:
    """A tool-call id of driveros' own: unique in a session, across loads and processes
    (the provider's ids repeat: some number calls per response, a replay reuses them)."""
    return f"tc-{uuid.uuid4().hex[:16]}"


def edited_path(arguments: dict[str, Any]) -> str | None:
    """The workspace-relative path an edit tool call names, normalized like a change's."""
    path = arguments.get("path")
    if not isinstance(path, str) or not path or "\x00" in path:
        return None
    return posixpath.normpath(path.replace("\\", "/")).lstrip("/")


def edit_content(workspace: Path, arguments: dict[str, Any]) -> list[Any] | None:
    """What an edit tool call did to the private copy, as a diff (old/new strings)."""
    rel = edited_path(arguments)
    if rel is None:
        return None
    new = arguments.get("new_string", arguments.get("content"))
    if not isinstance(new, str):
        return None
    old = arguments.get("old_string")
    return [
        schema.FileEditToolCallContent(
            type="diff",
            path=str(workspace / rel),
            old_text=old if isinstance(old, str) else None,
            new_text=new,
        )
    ]


def tool_kind(name: str) -> schema.ToolKind:
    return _KINDS.get(name, "other")


def text_block(text: str) -> schema.TextContentBlock:
    return schema.TextContentBlock(type="text", text=text)


#: The longest title shown (characters, escapes included); a longer one ends in "…".
TITLE_LIMIT = 200
_SPACES = re.compile(" {2,}")


def tool_title(name: str, arguments: dict[str, Any]) -> str:
    """A one-line title: the tool and what it acts on, shown as it is
    (:func:`driveros.approval.display_command`: no bidi override or control character from
    the model reorders or hides part of it), and marked when cut."""
    symbol = arguments.get("symbol")
    if name in _SEMANTIC_TITLES and isinstance(symbol, str) and symbol:
        arguments = {"path": f"{_SEMANTIC_TITLES[name]} {symbol}"}
        name = ""
    for key in ("command", "path", "pattern", "query"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            shown = display_command(_SPACES.sub(" ", value.strip(" ")))
            if len(shown) > TITLE_LIMIT:
                shown = shown[: TITLE_LIMIT - 1] + "…"
            return f"{display_command(name)}: {shown}" if name else shown
    return display_command(name)


def result_locations(
    workspace: Path, name: str, output: str, places: Sequence[ToolLocation] = ()
) -> list[schema.ToolCallLocation] | None:
    """The workspace places a semantic tool's answer names (None: not such a tool): the
    result's ``locations`` (a rename's changed lines too), else the ``path:line:`` lines of
    its output."""
    if name not in _SEMANTIC_TITLES:
        return None
    named = [(p.path, p.line) for p in places] or [
        (m.group(1), int(m.group(2))) for m in _PLACE.finditer(output)
    ]
    found: list[schema.ToolCallLocation] = []
    for path, line in named:
        rel = posixpath.normpath(path)
        if rel == ".." or rel.startswith(("/", "../")) or "\x00" in rel:
            continue
        found.append(schema.ToolCallLocation(path=str(workspace / rel), line=line))
        if len(found) >= MAX_RESULT_LOCATIONS:
            break
    return found or None


def locations(workspace: Path, arguments: dict[str, Any]) -> list[schema.ToolCallLocation] | None:
    """Where a tool call acts, as absolute paths in the user's workspace."""
    path = arguments.get("path")
    if not isinstance(path, str) or not path or "\x00" in path:
        return None
    where = Path(path) if Path(path).is_absolute() else workspace / path
    return [schema.ToolCallLocation(path=str(where))]


class UpdateStream:
    """Turns run events into session updates for one session.

    ``send`` delivers one update to the client; :meth:`close` flushes what is buffered and
    stops the timer. Every delivered update is appended to ``history``.
    """

    def __init__(self, send: Send, *, workspace: Path, history: list[Update]) -> None:
        self._send = send
        self._workspace = workspace
        self.history = history
        self._buffer: list[tuple[str, str]] = []  # (kind, text), kind in {"text", "thinking"}
        self._lock = asyncio.Lock()
        self._timer: asyncio.Task[None] | None = None
        #: ACP ids of tool calls announced and without a final status yet -> tool name
        self.open_calls: dict[str, str] = {}
        #: the provider's call id -> the ACP ids announced for it, oldest first
        self._ids: dict[str, deque[str]] = {}
        #: ACP id -> the arguments of an edit call still running (for its diff and path)
        self._edit_args: dict[str, dict[str, Any]] = {}
        #: workspace-relative path -> ACP ids of edits of the private copy awaiting review
        self._pending_edits: dict[str, list[str]] = {}

    async def emit(self, update: Update) -> None:
        async with self._lock:
            await self._flush_locked()
            await self._deliver(update)

    async def _deliver(self, update: Update) -> None:
        self.history.append(update)
        await self._send(update)

    async def _flush_locked(self) -> None:
        if not self._buffer:
            return
        merged: list[tuple[str, str]] = []
        for kind, text in self._buffer:
            if merged and merged[-1][0] == kind:
                merged[-1] = (kind, merged[-1][1] + text)
            else:
                merged.append((kind, text))
        self._buffer.clear()
        for kind, text in merged:
            if kind == "thinking":
                await self._deliver(
                    schema.AgentThoughtChunk(
                        session_update="agent_thought_chunk", content=text_block(text)
                    )
                )
            else:
                await self._deliver(
                    schema.AgentMessageChunk(
                        session_update="agent_message_chunk", content=text_block(text)
                    )
                )

    async def flush(self) -> None:
        async with self._lock:
            await self._flush_locked()

    async def _tick(self) -> None:
        try:
            await asyncio.sleep(FLUSH_INTERVAL)
            await self.flush()
        finally:
            self._timer = None

    def _buffered(self, kind: str, text: str) -> None:
        if not text:
            return
        self._buffer.append((kind, text))
        if self._timer is None:
            self._timer = asyncio.create_task(self._tick())

    async def close(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await timer
        await self.flush()

    async def on_event(self, event: Event) -> None:
        """The ``on_event`` of the run."""
        match event.type:
            case "text":
                # A non-delta text repeats the streamed answer: the deltas already went out.
                if event.delta:
                    self._buffered("text", event.text)
            case "thinking":
                if event.delta:
                    self._buffered("thinking", event.text)
            case "tool_call":
                call_id = new_call_id()
                self.open_calls[call_id] = event.name
                self._ids.setdefault(event.call_id, deque()).append(call_id)
                if event.name in EDIT_TOOLS:
                    self._edit_args[call_id] = event.arguments
                await self.emit(
                    schema.ToolCallStart(
                        session_update="tool_call",
                        tool_call_id=call_id,
                        title=tool_title(event.name, event.arguments),
                        kind=tool_kind(event.name),
                        status="in_progress",
                        locations=locations(self._workspace, event.arguments),
                        raw_input=event.arguments,
                    )
                )
            case "tool_result":
                call_id = self._take(event.call_id)
                arguments = self._edit_args.pop(call_id, None)
                rel = edited_path(arguments) if arguments is not None else None
                if event.ok and arguments is not None and rel is not None:
                    await self._pending_edit(call_id, rel, arguments, event.output)
                    return
                self.open_calls.pop(call_id, None)
                shown = event.output
                if len(shown) > SHOWN_OUTPUT:
                    shown = shown[:SHOWN_OUTPUT] + "\n… (output shortened)"
                await self.emit(
                    schema.ToolCallProgress(
                        session_update="tool_call_update",
                        tool_call_id=call_id,
                        status="completed" if event.ok else "failed",
                        locations=result_locations(
                            self._workspace, event.name, event.output, event.locations
                        ),
                        content=[
                            schema.ContentToolCallContent(type="content", content=text_block(shown))
                        ]
                        if shown
                        else None,
                        raw_output={"ok": event.ok, "output": event.output},
                    )
                )
            case "stuck":
                await self.emit(
                    schema.AgentThoughtChunk(
                        session_update="agent_thought_chunk",
                        content=text_block(f"\n[stuck: {event.detail}]\n"),
                    )
                )
            case _:
                pass

    def _take(self, provider_id: str) -> str:
        """The ACP id of the oldest announced call with this provider id (a result without
        an announced call gets an id of its own)."""
        queue = self._ids.get(provider_id)
        if not queue:
            return new_call_id()
        call_id = queue.popleft()
        if not queue:
            del self._ids[provider_id]
        return call_id

    def call_id_of(self, provider_id: str | None) -> str | None:
        """The ACP id announced for the model's tool call ``provider_id`` (the newest one:
        the call being approved), None when there is none."""
        queue = self._ids.get(provider_id) if provider_id is not None else None
        return queue[-1] if queue else None

    async def _pending_edit(
        self, call_id: str, rel: str, arguments: dict[str, Any], output: str
    ) -> None:
        """An edit of the private copy: shown with its diff, and pending until the user
        accepts or rejects the file (:meth:`settle_edits`)."""
        self._pending_edits.setdefault(rel, []).append(call_id)
        await self.emit(
            schema.ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=call_id,
                status="pending",
                content=edit_content(self._workspace, arguments),
                raw_output={"ok": True, "output": output, "review": "pending"},
            )
        )

    async def settle_edits(self, paths: Iterable[str], *, written: bool, note: str) -> None:
        """The user decided about ``paths``: their edit calls are ``completed`` once
        written to the real file, else ``failed``."""
        for rel in paths:
            for call_id in self._pending_edits.pop(rel, []):
                self.open_calls.pop(call_id, None)
                await self.emit(
                    schema.ToolCallProgress(
                        session_update="tool_call_update",
                        tool_call_id=call_id,
                        status="completed" if written else "failed",
                        raw_output={"written": written, "detail": note},
                    )
                )

    async def settle_unreviewed_edits(self, note: str) -> None:
        """Edits no review reached (the run proposed nothing for their file, or ended
        without a proposal): ``failed``, the user's file untouched."""
        await self.settle_edits(list(self._pending_edits), written=False, note=note)

    async def fail_open_calls(self, reason: str) -> None:
        """Mark the tool calls that never got a result as failed (a canceled run)."""
        for call_id in list(self.open_calls):
            self.open_calls.pop(call_id, None)
            await self.emit(
                schema.ToolCallProgress(
                    session_update="tool_call_update",
                    tool_call_id=call_id,
                    status="failed",
                    raw_output={"ok": False, "output": reason},
                )
            )
