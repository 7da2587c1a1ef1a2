"""Rendering for ``driveros agent``: the live trace on stderr and the data formats on stdout."""

from __future__ import annotations

import json
import re
from typing import TextIO

from driveros._plural import files
from driveros._unicode import json_terminal_safe
from driveros.agent import Event, Result
from driveros.approval import display_command
from driveros.llm import format_cost

_MAX_OUTPUT_LINES = 6
#: Collapsed to one space in one-line fields; every other control character is escaped.
_BLANKS = re.compile(r"[ \t\r\n]+")


def _one_line(text: str, limit: int = 160) -> str:
    text = display_command(_BLANKS.sub(" ", text).strip())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _output_line(text: str, limit: int = 160) -> str:
    """One line of tool output: its indentation and inner spacing kept (code keeps its
    shape), tabs expanded, trailing blanks dropped, every other control character escaped."""
    text = display_command(text.rstrip(" \t\r\n").expandtabs(4))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _lines(text: str) -> str:
    """Streamed text for the terminal: line breaks kept, every other control escaped."""
    return "\n".join(display_command(line) for line in text.split("\n"))


class TraceWriter:
    """Human-readable live trace (stderr). Coalesces text and thinking deltas into one line."""

    def __init__(self, stream: TextIO, *, show_thinking: bool = True) -> None:
        self._out = stream
        self._show_thinking = show_thinking
        self._open: str | None = None  # "text" | "thinking" while a delta line is open

    def _write(self, text: str) -> None:
        try:
            self._out.write(text)
            self._out.flush()
        except (BrokenPipeError, ValueError):
            pass

    def _close_line(self) -> None:
        if self._open is not None:
            self._write("\n")
            self._open = None

    def _line(self, text: str) -> None:
        self._close_line()
        self._write(text + "\n")

    def write(self, event: Event) -> None:
        match event.type:
            case "run_started":
                where = f"{event.provider}/{event.model}" if event.provider else "setup"
                self._line(f"driveros: run {event.run_id} · {where} · {event.sandbox or '-'}")
                if event.left_out:
                    shown = ", ".join(display_command(p) for p in event.left_out[:10])
                    more = len(event.left_out) - 10
                    self._line(
                        "driveros: left out of the scratch copy (untracked, over the size"
                        f" limit): {shown}" + (f" and {more} more" if more > 0 else "")
                    )
            case "turn_started":
                self._line(f"── turn {event.turn}")
            case "thinking":
                if self._show_thinking and event.text:
                    if self._open != "thinking":
                        self._close_line()
                        self._write("  thinking: ")
                        self._open = "thinking"
                    self._write(display_command(event.text.replace("\n", " ")))
            case "text":
                if self._open != "text":
                    self._close_line()
                    self._write("  ")
                    self._open = "text"
                self._write(_lines(event.text).replace("\n", "\n  "))
            case "tool_call":
                command = event.arguments.get("command") if event.name == "run" else None
                if isinstance(command, str):  # a command is shown whole, never shortened
                    self._line(f"  → run {display_command(command)}")
                else:
                    args = json.dumps(event.arguments, ensure_ascii=False)
                    self._line(f"  → {display_command(event.name)} {_one_line(args)}")
            case "approval":
                who = f" by {display_command(event.answered_by)}" if event.answered_by else ""
                if event.decision in ("blocked", "denied"):
                    self._line(f"    ✗ {event.decision}{who}: {_one_line(event.reason)}")
                elif event.asked:
                    scope = " for this run" if event.scope == "run" else " once"
                    self._line(f"    ✓ approved{scope}{who}")
            case "tool_result":
                mark = "✓" if event.ok else "✗"
                lines = event.output.splitlines()
                self._line(f"    {mark} {event.name} ({event.duration_ms:.0f} ms)")
                for line in lines[:_MAX_OUTPUT_LINES]:
                    self._line(f"      {_output_line(line)}")
                if len(lines) > _MAX_OUTPUT_LINES:
                    self._line(f"      … {len(lines) - _MAX_OUTPUT_LINES} more lines")
            case "edit":
                self._line(f"    ✎ {event.action} {display_command(event.path)}")
            case "diagnostics":
                self._line(
                    f"    diagnostics: {len(event.new)} new, {len(event.fixed)} fixed, "
                    f"{event.total} total"
                )
            case "memory":
                detail = f" ({_one_line(event.detail)})" if event.detail else ""
                self._line(f"  memory: {event.action} {event.count}{detail}")
            case "stuck":
                self._line(f"  stuck [{event.detector}]: {_one_line(event.detail)}")
            case "turn_finished":
                u = event.usage
                self._line(
                    f"   ({event.duration_ms:.0f} ms, {u.input_tokens} in"
                    f" ({u.cache_read_tokens} cached) / {u.output_tokens} out,"
                    f" {format_cost(u)})"
                )
            case "compaction":
                how = "summarized" if event.method == "summary" else "trimmed"
                self._line(
                    f"  context {how}: {event.tokens_before} → {event.tokens_after} tokens"
                    f" (budget {event.budget})"
                )
            case "proposal":
                self._line(f"  proposal: {files(len(event.files))} changed")
            case "result":
                self._close_line()
                if event.error and event.outcome not in ("answered", "unverified"):
                    self._line(f"driveros: {event.outcome}: {event.error}")


def summary_line(result: Result) -> str:
    """The last stdout line of ``--format text``."""
    u = result.usage
    fields = [
        f"outcome={result.outcome}",
        f"exit={result.exit_code}",
        f"verified={'yes' if result.verified else 'no'}",
        f"turns={result.turns}",
        f"tokens={u.total_tokens or u.input_tokens + u.output_tokens}",
        f"cached={u.cache_read_tokens}",
        f"cost={format_cost(u)}",
        f"duration={result.duration_ms / 1000:.1f}s",
    ]
    if result.targets_fixed is not None:
        fields.append(f"targets_fixed={'yes' if result.targets_fixed else 'no'}")
    if result.stuck_detector:
        fields.append(f"detector={result.stuck_detector}")
    return "SUMMARY " + " ".join(fields)


def result_json(result: Result) -> str:
    """The result as one JSON line, DEL, C1 and bidi controls escaped (the same data)."""
    return json_terminal_safe(result.model_dump_json())


def event_json(event: Event) -> str:
    """An event as one ndjson line, escaped like :func:`result_json`."""
    return json_terminal_safe(event.model_dump_json())
