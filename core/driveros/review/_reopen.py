"""Reopening only some kept copies: a held run's (``driveros runs``) or an editor's kept
proposal, chosen by their manifest before anything is mounted or adopted, so a process never
takes over a copy another kind of owner kept (see :func:`reopen_kept_where`)."""

from __future__ import annotations

from pathlib import Path

from driveros.review._kept import KeptScratch, Wanted
from driveros.review._scratch import ScratchWorkspace


async def reopen_kept_where(
    wanted: Wanted, *, workspace: Path | None = None
) -> list[KeptScratch[ScratchWorkspace]]:
    """:meth:`ScratchWorkspace.reopen_kept` of only the copies whose manifest ``wanted``
    accepts; the others are neither mounted nor adopted (their owner keeps them)."""
    return await ScratchWorkspace.reopen_kept(workspace=workspace, wanted=wanted)
