"""Diagnostics tracking for a run: a baseline, a snapshot after each editing turn, the delta."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from driveros._errors import DriverosError
from driveros.agent._events import DiagnosticItem
from driveros.agent._hooks import DiagnosticsSnapshot, DiagnosticsSource

log = logging.getLogger(__name__)

_Key = tuple[str, str, str | None, str, str]


def diagnostic_key(item: DiagnosticItem) -> _Key:
    """Identity of a diagnostic across edits: line numbers move, the message stays."""
    return (item.path, item.severity, item.code, " ".join(item.message.split()), item.source)


@dataclass(frozen=True)
class DiagnosticsDelta:
    new: list[DiagnosticItem]
    fixed: list[DiagnosticItem]
    unchanged: int
    total: int

    def describe(self) -> str:
        head = (
            f"[build diagnostics after this turn's edits: {len(self.new)} new, "
            f"{len(self.fixed)} fixed, {self.unchanged} unchanged, {self.total} total]"
        )
        lines = [head]
        for label, items in (("new", self.new), ("fixed", self.fixed)):
            for d in items[:20]:
                code = f" [{d.code}]" if d.code else ""
                lines.append(
                    f"{label}: {d.path}:{d.line}:{d.column}: {d.severity}: {d.message}{code}"
                )
            if len(items) > 20:
                lines.append(f"{label}: ... and {len(items) - 20} more")
        return "\n".join(lines)


def compute_delta(
    previous: DiagnosticsSnapshot | None, current: DiagnosticsSnapshot
) -> DiagnosticsDelta:
    before = Counter(diagnostic_key(d) for d in previous.items) if previous else Counter()
    new: list[DiagnosticItem] = []
    for item in current.items:
        key = diagnostic_key(item)
        if before[key] > 0:
            before[key] -= 1
        else:
            new.append(item)
    after = Counter(diagnostic_key(d) for d in current.items)
    fixed: list[DiagnosticItem] = []
    for item in previous.items if previous else ():
        key = diagnostic_key(item)
        if after[key] > 0:
            after[key] -= 1
        else:
            fixed.append(item)
    total = len(current.items)
    return DiagnosticsDelta(new=new, fixed=fixed, unchanged=total - len(new), total=total)


def targets_remaining(
    targets: Sequence[DiagnosticItem], snapshot: DiagnosticsSnapshot
) -> list[DiagnosticItem]:
    present = {diagnostic_key(d) for d in snapshot.items}
    return [t for t in targets if diagnostic_key(t) in present]


class DiagnosticsTracker:
    """Owns the feed calls of one run. A failing feed is logged and treated as absent."""

    def __init__(self, source: DiagnosticsSource) -> None:
        self._source = source
        self._baseline_taken = False
        self._last: DiagnosticsSnapshot | None = None

    async def ensure_baseline(self) -> DiagnosticsSnapshot | None:
        """Snapshot the state before the run's first edit (once; later calls are free).

        Returns the baseline when this call took it, else None."""
        if self._baseline_taken:
            return None
        self._baseline_taken = True
        if self._last is None:
            self._last = await self.snapshot()
        return self._last

    async def snapshot(self, changed: Sequence[str] = ()) -> DiagnosticsSnapshot | None:
        try:
            return await self._source.snapshot(changed=changed)
        except DriverosError as exc:
            log.warning("diagnostics feed failed: %s", exc)
            return None

    async def current(self) -> DiagnosticsSnapshot | None:
        snap = await self.snapshot()
        if snap is not None:
            self._last = snap
        return snap

    async def after_edits(
        self, changed: Sequence[str]
    ) -> tuple[DiagnosticsSnapshot, DiagnosticsDelta] | None:
        previous = self._last
        current = await self.snapshot(changed)
        if current is None:
            return None
        self._last = current
        return current, compute_delta(previous, current)
