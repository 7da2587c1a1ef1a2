"""One run's trace to the editor: ``$/progress``, ``driveros/trace`` and the log fallback.

Events arrive synchronously from the agent (:meth:`TraceChannel.push` never blocks); a small
flusher task sends them at most once per ``interval`` (50 ms: ~20 updates/s per run).
Streamed ``thinking``/``text`` deltas that arrive within one interval are merged into one
event, so a fast model cannot flood the editor; every other event is sent as is, in order,
except the run's ``result``: the agent emits it before its cleanup (sandbox teardown, the
scratch copy's changes), so it is held until the run manager has settled the run's state and
:meth:`TraceChannel.finish` is called. A client that hears the result can list the run in its
final state (docs/protocol.md, "Trace"). A ``tool_result`` that names places (the semantic
tools) is sent with them as LSP ``locations`` (:mod:`driveros_lsp._trace_locations`), located
before it is sent, in order. Every run's trace ends with exactly one ``result``:
when the agent never wrote one (the run ended before the agent started: canceled during the
trust question, a setup failure, server exit), :meth:`TraceChannel.finish` sends the one the
run manager's settled state implies instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from driveros.llm import format_cost
from driveros_lsp.protocol import NOTIFY_TRACE
from driveros_lsp.protocol_models import trace_params

if TYPE_CHECKING:
    from driveros.agent import Approval, Event
    from driveros_lsp._trace_locations import Locate
    from driveros_lsp.protocol_models import TraceLocation

logger = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 0.05
PROGRESS_CREATE_TIMEOUT_S = 10.0
#: How long one event's places may take to locate (reading lines); past it, sent without.
LOCATE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class TraceTargets:
    """Which channels the client handles (decided from its capabilities)."""

    progress: bool
    trace: bool

    @property
    def log(self) -> bool:
        return not (self.progress or self.trace)


@dataclass(frozen=True)
class TraceSender:
    """How the channel talks to the client (supplied by the server)."""

    notify: Callable[[str, Any], None]
    create_progress: Callable[[str], Awaitable[object]]
    progress: Callable[[str, dict[str, Any]], None]
    log: Callable[[str], None]


def _shorten(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def describe(event: Event) -> str | None:
    """The progress line for an event (None when it does not change the line)."""
    match event.type:
        case "turn_started":
            return f"turn {event.turn}"
        case "thinking":
            return f"turn {event.turn}: thinking"
        case "text":
            return f"turn {event.turn}: writing"
        case "tool_call":
            return f"turn {event.turn}: {event.name}"
        case "tool_result":
            return f"turn {event.turn}: {event.name} {'ok' if event.ok else 'failed'}"
        case "diagnostics":
            problems = f"{event.total} problem{'' if event.total == 1 else 's'}"
            return f"turn {event.turn}: {problems}"
        case "stuck":
            return f"turn {event.turn}: stuck ({event.detector})"
        case "approval":
            detail = approval_detail(event)
            return f"turn {event.turn}: {event.name} {event.decision}{detail}"
        case _:
            return None


def approval_detail(event: Approval) -> str:
    """`` (asked, by Neovim, for this run)``: who decided an approval and for how long."""
    parts: list[str] = []
    if event.asked:
        parts.append("asked")
    if event.answered_by:
        parts.append(f"by {event.answered_by}")
    if event.scope == "run":
        parts.append("for this run")
    elif event.scope == "once":
        parts.append("once")
    return f" ({', '.join(parts)})" if parts else ""


def log_line(event: Event) -> str | None:
    """One human line per event for clients that only show logs."""
    match event.type:
        case "run_started":
            return f"started: {_shorten(event.task)}"
        case "thinking" | "text":
            text = event.text
            return f"{event.type}: {_shorten(text, 200)}" if text.strip() else None
        case "tool_call":
            return f"tool {event.name} {_shorten(str(event.arguments), 160)}"
        case "tool_result":
            return f"tool {event.name} {'ok' if event.ok else 'failed'}"
        case "result":
            cost = format_cost(event.usage)
            return f"{event.outcome} (cost={cost}): {_shorten(event.answer, 200)}"
        case _:
            return describe(event)


def _fragment(last: Event | None, event: Event) -> str | None:
    """The text of ``event`` when it is a streamed fragment continuing ``last`` (same stream,
    same turn), to be merged into it; None otherwise."""
    if event.type != "thinking" and event.type != "text":
        return None
    if last is None or (last.type != "thinking" and last.type != "text"):
        return None
    if last.type == event.type and event.delta and last.delta and event.turn == last.turn:
        return event.text
    return None


class TraceChannel:
    """Coalesces and sends one run's events (see the module docstring)."""

    def __init__(
        self,
        *,
        run_id: str,
        title: str,
        token: str,
        targets: TraceTargets,
        sender: TraceSender,
        interval: float = DEFAULT_INTERVAL_S,
        locate: Locate | None = None,
    ) -> None:
        self.run_id = run_id
        self._locate = locate
        #: The LSP locations of queued events, by ``seq`` (found before they are sent).
        self._located: dict[int, list[TraceLocation]] = {}
        self._title = title
        self._token = token
        self._targets = targets
        self._sender = sender
        self._interval = interval
        #: Queued events; a delta carries the texts merged into it (joined once, at flush).
        self._pending: list[tuple[Event, list[str]]] = []
        self._line: str | None = None
        self._end_message: str | None = None
        #: The run's ``result`` event, held until :meth:`finish` (see the module docstring).
        self._result: Event | None = None
        #: The highest ``seq`` pushed (a result made up at the end follows it).
        self._seq = 0
        #: Called by :meth:`finish`'s last flush, after the last event and before the end.
        self._then: Callable[[], None] | None = None
        self._progress_ok = False
        self._sent_line: str | None = None
        self._ended = False
        self._wake = asyncio.Event()
        self._finishing = asyncio.Event()
        self._task = asyncio.create_task(self._flusher(), name=f"driveros-trace-{run_id}")

    def push(self, event: Event) -> None:
        """Queue one event; merges a delta into the previous one of the same stream. The
        ``result`` is held until :meth:`finish`; what comes after it is dropped (the run's
        state is settled)."""
        if self._finishing.is_set():
            return
        self._seq = max(self._seq, event.seq)
        if event.type == "result":
            self._result = event
            return
        last = self._pending[-1][0] if self._pending else None
        fragment = _fragment(last, event)
        if fragment is not None:
            self._pending[-1][1].append(fragment)
        else:
            self._pending.append((event, []))
        line = describe(event)
        if line is not None:
            self._line = line
        self._wake.set()

    def finish(
        self,
        message: str,
        then: Callable[[], None] | None = None,
        *,
        result: Callable[[int], Event] | None = None,
    ) -> None:
        """The run's state is settled: flush what is left, the ``result`` last, call ``then``,
        end the progress with ``message``; the flusher then stops. Without a ``result`` from
        the agent, ``result(seq)`` makes the one to send (never two). Called once."""
        if self._finishing.is_set():
            return
        held = self._result
        if held is None and result is not None:
            held = result(self._seq + 1)
        if held is not None:
            self._pending.append((held, []))
            self._result = None
        self._then = then
        self._end_message = message
        self._finishing.set()
        self._wake.set()

    async def wait_closed(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    def cancel(self) -> None:
        self._task.cancel()

    def finish_now(
        self,
        message: str,
        then: Callable[[], None] | None = None,
        *,
        result: Callable[[int], Event] | None = None,
    ) -> None:
        """:meth:`finish` at once, without the flusher (stopped at server exit): what is
        left, the ``result`` last, ``then`` and the progress end are sent before returning."""
        self._task.cancel()
        self.finish(message, then, result=result)
        self._flush()
        self._end()

    async def _flusher(self) -> None:
        if self._targets.progress:
            try:
                await asyncio.wait_for(
                    self._sender.create_progress(self._token), PROGRESS_CREATE_TIMEOUT_S
                )
                self._progress_ok = True
            except Exception as exc:  # a client that refuses the token still gets the rest
                logger.warning("progress token for run %s refused: %s", self.run_id, exc)
            if self._progress_ok:
                self._sender.progress(
                    self._token,
                    {
                        "kind": "begin",
                        "title": "driveros",
                        "message": self._title,
                        "cancellable": True,
                    },
                )
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self._locate_pending()
            self._flush()
            if self._end_message is not None and not self._pending:
                self._end()
                return
            # Rate limit: wait out the interval, unless the run ends meanwhile.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._finishing.wait(), self._interval)

    async def _locate_pending(self) -> None:
        """Find the places of the queued events that name some (until none is left: events
        pushed meanwhile are located too, so :meth:`_flush` sends each with its places)."""
        if self._locate is None or not self._targets.trace:
            return
        while todo := [
            e
            for e, _ in self._pending
            if e.type == "tool_result" and e.locations and e.seq not in self._located
        ]:
            for event in todo:
                try:
                    async with asyncio.timeout(LOCATE_TIMEOUT_S):
                        self._located[event.seq] = await self._locate(event)
                except Exception as exc:  # a link less, never the event
                    logger.warning("locating %s of run %s: %s", event.name, self.run_id, exc)
                    self._located[event.seq] = []

    def _flush(self) -> None:
        """Send the queued events (deltas merged) and the progress line if it changed."""
        pending, self._pending = self._pending, []
        for event, more in pending:
            if more and (event.type == "thinking" or event.type == "text"):
                event = event.model_copy(update={"text": event.text + "".join(more)})
            self._send_event(event)
        if self._progress_ok and self._line is not None and self._line != self._sent_line:
            self._sent_line = self._line
            self._sender.progress(self._token, {"kind": "report", "message": self._sent_line})

    def _end(self) -> None:
        """Call ``then`` and end the progress (once)."""
        if self._ended or self._end_message is None:
            return
        self._ended = True
        if self._then is not None:
            try:
                self._then()
            except Exception:
                logger.exception("ending the trace of run %s failed", self.run_id)
        if self._progress_ok:
            self._sender.progress(self._token, {"kind": "end", "message": self._end_message})

    def _send_event(self, event: Event) -> None:
        if self._targets.trace:
            params = trace_params(self.run_id, event, self._located.pop(event.seq, ()))
            if params is not None:  # a proposal is sent once, as driveros/proposal
                self._sender.notify(NOTIFY_TRACE, params.wire())
        if self._targets.log:
            line = log_line(event)
            if line is not None:
                self._sender.log(f"[driveros {self.run_id}] {line}")
