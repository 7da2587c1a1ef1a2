"""Garbage collection: remove what dead processes left behind."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from driveros.state._cleanup import remove_paths
from driveros.state._lease import Lease, list_leases, read_lease
from driveros.state._lock import kept_lock, open_lock_fd
from driveros.state._mounts import mounts_under, settle_mount_helpers, unmount_under
from driveros.state._paths import state_dir
from driveros.state._sessions import (
    SESSION_MAX_AGE_S,
    SESSION_MAX_COUNT,
    ForgottenSession,
    prune_sessions,
)

log = logging.getLogger(__name__)

#: How long a kept lease (a proposal waiting across restarts) survives its owner: 7 days.
KEPT_MAX_AGE_S = 7 * 24 * 3600.0
#: Stray temporary files in the state directory older than this are removed.
_STRAY_AGE_S = 24 * 3600.0


class Collected(BaseModel):
    """One lease whose resources were removed."""

    model_config = ConfigDict(frozen=True)

    id: str
    kind: str
    owner_pid: int
    #: ``owner_gone`` (the process died) or ``expired`` (kept longer than the maximum age).
    reason: str
    paths: list[str] = Field(default_factory=list)
    repo: str | None = None


class GcReport(BaseModel):
    """What :func:`collect_garbage` removed, and what it could not."""

    model_config = ConfigDict(frozen=True)

    state_dir: str
    removed: list[Collected] = Field(default_factory=list)
    #: Mount points of kept resources no live process owns (a proposal's view), unmounted;
    #: what they hold stays on disk for review.
    unmounted: list[str] = Field(default_factory=list)
    #: Kept ``driveros acp`` sessions past the retention (docs/acp.md).
    sessions: list[ForgottenSession] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    #: Another process was collecting at the same time; this call did nothing.
    busy: bool = False

    def summary(self) -> str:
        if self.busy:
            return "another driveros process is collecting garbage"
        if not self.removed and not self.sessions and not self.unmounted:
            return "nothing to remove"
        scratch = sum(1 for c in self.removed if c.kind == "scratch")
        other = len(self.removed) - scratch
        parts = []
        if scratch:
            parts.append(f"{scratch} scratch cop{'y' if scratch == 1 else 'ies'}")
        if other:
            parts.append(f"{other} other item{'' if other == 1 else 's'}")
        said = ["removed " + " and ".join(parts) + " left by ended processes"] if parts else []
        if self.unmounted:
            n = len(self.unmounted)
            said.append(
                f"unmounted {n} kept proposal view{'' if n == 1 else 's'} no process serves"
                " (the proposals stay for review)"
            )
        if self.sessions:
            n = len(self.sessions)
            said.append(f"removed {n} kept ACP session{'' if n == 1 else 's'} past the retention")
        return "; ".join(said)


def gc_reason(lease: Lease, now: float, max_kept_age: float = KEPT_MAX_AGE_S) -> str | None:
    """Why :func:`collect_garbage` would remove ``lease`` at ``now`` (``owner_gone``,
    ``expired``), or None (its owner lives, or it is kept and young enough)."""
    r = lease.record
    if r.kept is not None:
        if now - r.kept.at <= max_kept_age:
            return None
        return None if r.owner_process().alive() else "expired"
    return None if r.owner_process().alive() else "owner_gone"


def _try_lock(path: Path) -> int | None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _sweep_strays(state: Path, now: float) -> None:
    folder = state / "leases"
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            is_tmp = entry.name.startswith(".") and entry.name.endswith(".tmp")
            is_bad = entry.suffix == ".json" and entry.stat().st_size == 0
            if (is_tmp or is_bad) and now - entry.stat().st_mtime > _STRAY_AGE_S:
                entry.unlink(missing_ok=True)


def _unowned_leftovers(lease: Lease) -> tuple[list[str], list[str]] | None:
    """A kept lease's mounts (under its paths) and volatile paths still there, read from its
    file now; None when its owner lives (it was adopted) or the lease is gone. Blocking."""
    record = read_lease(lease.file)
    if record is None or record.kept is None or record.owner_process().alive():
        return None
    points = [p for path in record.paths for p in mounts_under(Path(path))]
    volatile = [p for p in record.kept.volatile if os.path.lexists(p)]
    return points, volatile


async def _let_go_unowned(lease: Lease, state: Path, errors: list[str]) -> list[str]:
    """Unmount a kept lease's mounts and remove its volatile paths when no live process owns
    it (its resources stay on disk); the mount points unmounted. Under :func:`kept_lock`: a
    process reopening the lease at the same time is either done (then the owner lives and
    nothing happens) or waits."""
    if await asyncio.to_thread(lease.record.owner_process().alive):
        return []
    async with kept_lock(state=state):
        found = await asyncio.to_thread(_unowned_leftovers, lease)
        if found is None:
            return []
        points, volatile = found
        try:
            await settle_mount_helpers(lease.record.paths)
            for path in lease.record.paths:
                await unmount_under(Path(path))
            refused = await remove_paths(volatile) if volatile else []
        except OSError as exc:
            errors.append(f"lease {lease.id}: {exc}")
            return []
    errors.extend(f"lease {lease.id}: not removing {p!r} (not a driveros path)" for p in refused)
    if points:
        log.info("unmounted %s (kept lease %s, its owner is gone)", ", ".join(points), lease.id)
    return points


async def collect_garbage(
    *,
    state: Path | None = None,
    max_kept_age: float = KEPT_MAX_AGE_S,
    session_max_age: float = SESSION_MAX_AGE_S,
    session_max_count: int = SESSION_MAX_COUNT,
) -> GcReport:
    """Remove every lease's resources whose owner is dead (scratch copies, their worktree
    entries, caches, sockets); kept leases only once older than ``max_kept_age`` (before
    that, a kept lease no live process owns is only unmounted: ``unmounted``); and the
    kept ``driveros acp`` sessions unused for ``session_max_age`` or past the newest
    ``session_max_count``.

    Never raises for one broken lease: failures are listed in ``errors`` and that lease is
    tried again next time. Only one process collects at a time (the others return ``busy``).
    """
    where = state or state_dir()
    if not await asyncio.to_thread(where.is_dir):
        return GcReport(state_dir=str(where))
    try:
        fd = await open_lock_fd(_try_lock, where / "gc.lock")
    except OSError as exc:
        return GcReport(state_dir=str(where), errors=[f"cannot lock {where}: {exc}"])
    if fd is None:
        return GcReport(state_dir=str(where), busy=True)
    try:
        removed: list[Collected] = []
        unmounted: list[str] = []
        errors: list[str] = []
        now = time.time()
        for lease in await list_leases(where):
            reason = await asyncio.to_thread(gc_reason, lease, now, max_kept_age)
            if reason is None:
                if lease.record.kept is not None:
                    unmounted.extend(await _let_go_unowned(lease, where, errors))
                continue
            r = lease.record
            try:
                # A mount helper the owner left running must not mount after the removal.
                await settle_mount_helpers(r.paths)
                refused = await remove_paths(
                    r.paths, repo_top=r.repo, lock_key=r.lock_key, state=where
                )
                await lease.forget()
            except OSError as exc:
                errors.append(f"lease {r.id}: {exc}")
                continue
            for path in refused:
                errors.append(f"lease {r.id}: not removing {path!r} (not a driveros path)")
            removed.append(
                Collected(
                    id=r.id,
                    kind=r.kind,
                    owner_pid=r.owner.pid,
                    reason=reason,
                    paths=[p for p in r.paths if p not in refused],
                    repo=r.repo,
                )
            )
        await asyncio.to_thread(_sweep_strays, where, now)
        sessions, failed = await asyncio.to_thread(
            prune_sessions, where, now=now, max_age=session_max_age, max_count=session_max_count
        )
        errors.extend(failed)
        return GcReport(
            state_dir=str(where),
            removed=removed,
            unmounted=unmounted,
            sessions=sessions,
            errors=errors,
        )
    finally:
        os.close(fd)


async def startup_gc(*, state: Path | None = None) -> GcReport | None:
    """:func:`collect_garbage` for a process start: logs what it removed, never raises."""
    try:
        report = await collect_garbage(state=state)
    except (OSError, ValueError) as exc:
        log.warning("driveros: cleaning up after ended processes failed: %s", exc)
        return None
    if report.removed or report.sessions or report.unmounted:
        log.warning("driveros: %s", report.summary())
        for c in report.removed:
            log.info("removed %s %s of pid %d: %s", c.kind, c.id, c.owner_pid, ", ".join(c.paths))
    for err in report.errors:
        log.warning("driveros: cleanup: %s", err)
    return report


@contextlib.asynccontextmanager
async def startup_gc_meanwhile(*, state: Path | None = None) -> AsyncIterator[None]:
    """:func:`startup_gc` in the background while the body runs (a long-lived process's start:
    it serves at once). When the body ends the collection is canceled (a removal under way
    finishes first) and awaited."""
    task = asyncio.ensure_future(startup_gc(state=state))
    try:
        yield
    finally:
        if not task.done():
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)
