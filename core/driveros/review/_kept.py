"""Scratch copies kept past their process (a proposal waiting for review): what is recorded
when one is kept, and how a later process takes it back.

A kept view lives on as its upper layer and bookkeeping, never as a mount: the process that
lets go of it unmounts it (``ScratchWorkspace.aclose``), garbage collection unmounts one whose
owner was killed (``driveros.state``), and :func:`reopen_layouts` mounts it again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from driveros._finish import thread_to_the_end
from driveros.review._errors import ReviewError
from driveros.review._hiding import drop_hide_layer, hide_layer_path, plant_hidden
from driveros.review._layout import Layout, layout_from_json, layout_to_json
from driveros.review._overlay import VIEW_STRATEGIES, is_mounted, mount_overlay, view_driver
from driveros.state import Kept, kept_leases, kept_lock, unmount_under

log = logging.getLogger(__name__)

#: The reopened copy's type (``ScratchWorkspace``; this module does not import it, which
#: imports this one).
S = TypeVar("S")
#: Which kept copies to reopen, by their manifest (``reopen_kept(wanted=...)``).
Wanted = Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True)
class KeptScratch(Generic[S]):
    """A scratch copy kept past its process (see :meth:`ScratchWorkspace.keep`), reopened."""

    scratch: S
    #: The caller's manifest, as given to :meth:`ScratchWorkspace.keep`.
    manifest: dict[str, Any]
    #: When it was kept (seconds since the epoch).
    kept_at: float


async def remount(lay: Layout) -> str | None:
    """Mount a kept overlay view again when it is not (after a reboot, or in a new process);
    None, or why not. The hide layer is made anew from ``lay.hidden`` (the old one, on a
    tmpfs, is gone after a reboot), registered in the copy's lease with its new place."""
    if lay.strategy not in VIEW_STRATEGIES or lay.lower is None:
        return None
    if lay.strategy != view_driver()[0]:
        return f"a {lay.strategy} view cannot be mounted by this process"
    if await is_mounted(lay.work):
        return None
    if lay.hide_layer is not None or lay.hidden:
        await drop_hide_layer(lay)
        lease = lay.lease
        if lease is not None:
            lay.hide_layer = await thread_to_the_end(hide_layer_path, lease.id)
            made = [str(lay.hide_layer)] if lay.hide_layer else []
            kept = lease.record.kept
            again = {} if kept is None else {"kept": {**kept.model_dump(), "volatile": made}}
            await lease.update(
                paths=[lease.record.paths[0], *made],
                detail={**lease.record.detail, "layout": layout_to_json(lay)},
                **again,
            )
        planted = await thread_to_the_end(plant_hidden, lay, lay.lower, list(lay.hidden))
        if lease is not None:
            await lease.update(detail={**lease.record.detail, "layout": layout_to_json(lay)})
        log.debug("driveros: hide layer of %s made again (%d paths)", lay.root, len(planted))
    return await mount_overlay(
        lay.lower, lay.upper, lay.overlay_work, lay.work, lay.strategy, lay.hide_layer
    )


async def let_go(lay: Layout) -> None:
    """Unmount a kept view and remove its hide layer (made again by :func:`remount`); the
    upper layer and the bookkeeping stay."""
    await unmount_under(lay.root)
    await drop_hide_layer(lay)


async def keep_layout(lay: Layout, manifest: Mapping[str, Any]) -> None:
    """Record ``lay`` and ``manifest`` in the copy's lease and mark it kept. The hide layer (on
    a tmpfs) is volatile: made again by a reopen, removed with the mount of a gone owner."""
    lease = lay.lease
    if lease is None:
        raise ReviewError("this scratch copy is not registered; it cannot be kept")
    await lease.update(detail={**lease.record.detail, "layout": layout_to_json(lay)})
    hide = lay.hide_layer
    volatile = [hide] if hide is not None and hide.parent != lay.root else []
    await lease.keep(manifest, volatile=volatile)


async def reopen_layouts(
    workspace: Path | None, wanted: Wanted | None = None
) -> list[tuple[Layout, Kept]]:
    """The kept copies (of ``workspace`` when given; whose manifest ``wanted`` accepts, when
    given: the others are neither mounted nor adopted), oldest first: each mounted again where
    it is a view and adopted by this process, as one step under ``kept_lock`` (garbage
    collection lets go of the view of a kept copy nobody owns, never of one just mounted
    here). Copies whose files are gone are dropped, their registration removed."""
    want = await asyncio.to_thread(Path(workspace).resolve) if workspace else None
    found: list[tuple[Layout, Kept]] = []
    for lease in await kept_leases("scratch"):
        record = lease.record
        kept = record.kept
        layout = layout_from_json(record.detail.get("layout"), lease)
        if kept is None or layout is None or (wanted is not None and not wanted(kept.manifest)):
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
        found.append((layout, kept))
    return found


async def let_go_kept(lay: Layout) -> None:
    """Unmount a kept view this process is done with (its upper layer stays), under
    ``kept_lock``: a process reopening it meanwhile mounts it again after, never before."""
    async with kept_lock(state=lay.lease.state if lay.lease is not None else None):
        await let_go(lay)
