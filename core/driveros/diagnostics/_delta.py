"""What changed between two snapshots, matched by identity."""

from __future__ import annotations

from collections import defaultdict

from pydantic import BaseModel, ConfigDict

from driveros.diagnostics._identity import ItemKey, item_key
from driveros.diagnostics._item import DiagnosticItem, DiagnosticsSnapshot


class DiagnosticsDelta(BaseModel):
    """What changed between two snapshots: ``new`` and ``unchanged`` are the later one's."""

    model_config = ConfigDict(frozen=True)

    new: tuple[DiagnosticItem, ...] = ()
    fixed: tuple[DiagnosticItem, ...] = ()
    unchanged: tuple[DiagnosticItem, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.new or self.fixed)

    @property
    def total(self) -> int:
        """How many items the later snapshot holds."""
        return len(self.new) + len(self.unchanged)


def diff_snapshots(prev: DiagnosticsSnapshot | None, cur: DiagnosticsSnapshot) -> DiagnosticsDelta:
    """Match diagnostics by identity; several with one identity pair up in line order.

    ``prev=None`` (no baseline) makes every item new."""
    if prev is None:
        return DiagnosticsDelta(new=cur.items)
    before: dict[ItemKey, list[DiagnosticItem]] = defaultdict(list)
    after: dict[ItemKey, list[DiagnosticItem]] = defaultdict(list)
    for item in prev.items:
        before[item_key(item)].append(item)
    for item in cur.items:
        after[item_key(item)].append(item)
    new: list[DiagnosticItem] = []
    fixed: list[DiagnosticItem] = []
    unchanged: list[DiagnosticItem] = []
    for key in sorted(set(before) | set(after)):
        old = sorted(before.get(key, []), key=lambda d: (d.line, d.column))
        now = sorted(after.get(key, []), key=lambda d: (d.line, d.column))
        paired = min(len(old), len(now))
        unchanged.extend(now[:paired])
        new.extend(now[paired:])
        fixed.extend(old[paired:])
    return DiagnosticsDelta(new=tuple(new), fixed=tuple(fixed), unchanged=tuple(unchanged))
