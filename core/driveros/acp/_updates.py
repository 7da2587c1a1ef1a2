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
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from acp import schema

from driveros.agent import Event
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
}


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
    for key in ("command", "path", "pattern", "query"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            shown = display_command(_SPACES.sub(" ", value.strip(" ")))
            if len(shown) > TITLE_LIMIT:
                shown = shown[: TITLE_LIMIT - 1] + "…"
            return f"{display_command(name)}: {shown}"
    return display_command(name)


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
        #: call ids of tool calls announced and not yet finished
        self.open_calls: dict[str, str] = {}

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
                self.open_calls[event.call_id] = event.name
                await self.emit(
                    schema.ToolCallStart(
                        session_update="tool_call",
                        tool_call_id=event.call_id,
                        title=tool_title(event.name, event.arguments),
                        kind=tool_kind(event.name),
                        status="in_progress",
                        locations=locations(self._workspace, event.arguments),
                        raw_input=event.arguments,
                    )
                )
            case "tool_result":
                self.open_calls.pop(event.call_id, None)
                shown = event.output
                if len(shown) > SHOWN_OUTPUT:
                    shown = shown[:SHOWN_OUTPUT] + "\n… (output shortened)"
                await self.emit(
                    schema.ToolCallProgress(
                        session_update="tool_call_update",
                        tool_call_id=event.call_id,
                        status="completed" if event.ok else "failed",
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
