"""Diagnostics tracking for a run: a baseline, a snapshot after each editing turn, the delta.

What a diagnostic is, when two are the same and how they read: ``driveros.diagnostics``."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from driveros._errors import DriverosError
from driveros.agent._hooks import DiagnosticsSource
from driveros.diagnostics import DiagnosticsDelta, DiagnosticsSnapshot, diff_snapshots

log = logging.getLogger(__name__)


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

    async def current(self, tool: str | None = None) -> DiagnosticsSnapshot | None:
        """The build now; with ``tool``, that linter or type checker run once on request
        (shown only: it never becomes the run's state, a stuck signal or a target)."""
        if tool is not None:
            return await self._on_request(tool)
        snap = await self.snapshot()
        if snap is not None:
            self._last = snap
        return snap

    async def _on_request(self, tool: str) -> DiagnosticsSnapshot:
        run_tool = getattr(self._source, "run_tool", None)
        if run_tool is None:
            raw = f"[{tool}] this run's diagnostics feed cannot run a tool on request"
            return DiagnosticsSnapshot(fingerprint="", raw=raw)
        try:
            snap: DiagnosticsSnapshot = await run_tool(tool)
        except DriverosError as exc:
            log.warning("diagnostics feed failed: %s", exc)
            return DiagnosticsSnapshot(fingerprint="", raw=f"[{tool}] could not run: {exc}")
        return snap

    async def after_edits(
        self, changed: Sequence[str]
    ) -> tuple[DiagnosticsSnapshot, DiagnosticsDelta] | None:
        previous = self._last
        current = await self.snapshot(changed)
        if current is None:
            return None
        self._last = current
        return current, diff_snapshots(previous, current)
