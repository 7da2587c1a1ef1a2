"""Reopening only some kept copies: a held run's (``driveros runs``) or an editor's kept
proposal, chosen by their manifest before anything is mounted or adopted, so a process never
takes over a copy another kind of owner kept (see :func:`reopen_kept_where`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from driveros.review._kept import KeptScratch, remount
from driveros.review._layout import layout_from_json
from driveros.review._scratch import ScratchWorkspace
from driveros.state import kept_leases, kept_lock

log = logging.getLogger(__name__)


async def reopen_kept_where(
    wanted: Callable[[Mapping[str, Any]], bool], *, workspace: Path | None = None
) -> list[KeptScratch[ScratchWorkspace]]:
    """:meth:`ScratchWorkspace.reopen_kept` of only the copies whose manifest ``wanted``
    accepts; the others are neither mounted nor adopted (their owner keeps them)."""
    want = await asyncio.to_thread(Path(workspace).resolve) if workspace else None
    found: list[KeptScratch[ScratchWorkspace]] = []
    for lease in await kept_leases("scratch"):
        kept = lease.record.kept
        layout = layout_from_json(lease.record.detail.get("layout"), lease)
        if kept is None or layout is None or not wanted(kept.manifest):
            continue
        if want is not None and layout.workspace != want:
            continue
        async with kept_lock(state=lease.state):
            why = await remount(layout)
            gone = why is not None or not await asyncio.to_thread(layout.work.is_dir)
            if not gone:
                await lease.adopt()
        if gone:
            log.warning("driveros: dropping kept scratch %s: %s", layout.root, why or "gone")
            await lease.release()
            continue
        scratch = ScratchWorkspace(layout)
        scratch._kept = True
        await scratch.changes()
        found.append(KeptScratch(scratch=scratch, manifest=dict(kept.manifest), kept_at=kept.at))
    return found
