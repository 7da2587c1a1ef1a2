"""The one text form of a diagnostic, and the listings built from it.

``path:line:col: severity [source code] message``: the position is left out when unknown
(``0``), the bracket when there is neither source nor code; the lines after a message's first
are indented so that each diagnostic starts a line of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from driveros._plural import count
from driveros.diagnostics._delta import DiagnosticsDelta
from driveros.diagnostics._item import DiagnosticItem, DiagnosticsSnapshot

#: Continuation lines of a multi-line message start with this.
_INDENT = "    "


def format_item(item: DiagnosticItem) -> str:
    """``path:line:col: severity [source code] message`` (see the module docstring)."""
    where = item.path or "."
    if item.line > 0:
        where += f":{item.line}" + (f":{item.column}" if item.column > 0 else "")
    tag = " ".join(p for p in (item.source, item.code or "") if p)
    lines = item.message.splitlines() or [""]
    head = f"{where}: {item.severity}" + (f" [{tag}]" if tag else "") + f" {lines[0]}"
    return "\n".join([head.rstrip(), *(_INDENT + line for line in lines[1:])])


def format_items(items: Sequence[DiagnosticItem], *, prefix: str = "", limit: int = 0) -> str:
    """One :func:`format_item` per line, each after ``prefix``; past ``limit`` (0: none) a
    count of the rest."""
    shown = items[:limit] if limit > 0 else items
    lines = [f"{prefix}{format_item(d)}" for d in shown]
    if len(items) > len(shown):
        lines.append(f"{prefix}... and {len(items) - len(shown)} more")
    return "\n".join(lines)


def render_snapshot(snapshot: DiagnosticsSnapshot) -> str:
    """The ``diagnostics`` tool's answer: what the checks said, and what they said unparsed."""
    checks = ", ".join(snapshot.checks) or "no checks"
    if snapshot.items:
        head = f"{count(len(snapshot.items), 'diagnostic')} ({checks}):"
        lines = [head, format_items(snapshot.items)]
    else:
        lines = [f"No diagnostics ({checks})."]
    if snapshot.raw:
        lines.append(snapshot.raw)
    return "\n".join(lines)


def render_delta(delta: DiagnosticsDelta, *, limit: int = 20) -> str:
    """The note the model reads after a turn's edits: counts, then what is new and fixed."""
    lines = [
        f"[build diagnostics after this turn's edits: {len(delta.new)} new, "
        f"{len(delta.fixed)} fixed, {len(delta.unchanged)} unchanged, {delta.total} total]"
    ]
    for label, items in (("new", delta.new), ("fixed", delta.fixed)):
        if items:
            lines.append(format_items(items, prefix=f"{label}: ", limit=limit))
    return "\n".join(lines)
