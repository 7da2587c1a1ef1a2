"""Per-repository locks: one asyncio lock per key within a process, one file lock across.

git cannot run two ``git worktree add`` (or an add and a ``prune``) on one repository at the
same time: both pick the same administrative directory name under ``.git/worktrees`` and
one of them fails ("failed to read .../commondir"). Every worktree command of ours on a
repository runs under :func:`repo_lock` keyed by the repository's common git directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import logging
import os
import weakref
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from driveros._finish import finish_then_reraise
from driveros.state._paths import ensure_dir, state_dir

log = logging.getLogger(__name__)

_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)
#: Polling interval bounds while another process holds a file lock (seconds).
_POLL_MIN = 0.005
_POLL_MAX = 0.1


def _loop_lock(key: str) -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    locks = _LOCKS.setdefault(loop, {})
    lock = locks.get(key)
    if lock is None:
        lock = locks[key] = asyncio.Lock()
    return lock


def _open_lock_file(path: Path) -> int:
    ensure_dir(path.parent)
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)


async def open_lock_fd(opener: Callable[[Path], int | None], path: Path) -> int | None:
    """``opener(path)`` (a descriptor of a lock file, maybe locked already) in a worker thread.

    A cancellation waits for the thread and closes what it opened: a descriptor left open
    would hold its lock until the process ends (every later lock in this process refused).
    """
    opened: list[int | None] = []

    async def open_() -> None:
        opened.append(await asyncio.to_thread(opener, path))

    try:
        await finish_then_reraise(open_())
    except asyncio.CancelledError:
        if opened and opened[0] is not None:
            os.close(opened[0])
        raise
    return opened[0]


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextlib.asynccontextmanager
async def file_lock(path: Path) -> AsyncIterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if absent) without blocking the loop.

    Waiting polls, so cancellation while waiting leaves nothing behind; the lock is released
    when the block ends or the process dies.
    """
    fd: int | None = None
    try:
        fd = await open_lock_fd(_open_lock_file, path)
    except OSError as exc:
        # No usable state directory (read-only home, ...): within-process locking only.
        log.warning("driveros: cannot open %s (%s); locking within this process only", path, exc)
    if fd is None:
        yield
        return
    try:
        delay = _POLL_MIN
        while not _try_flock(fd):
            await asyncio.sleep(delay)
            delay = min(delay * 2, _POLL_MAX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def lock_path(key: str | Path, *, state: Path | None = None) -> Path:
    digest = hashlib.sha256(os.fsencode(str(key))).hexdigest()[:24]
    return (state or state_dir()) / "locks" / f"repo-{digest}.lock"


@contextlib.asynccontextmanager
async def repo_lock(key: str | Path, *, state: Path | None = None) -> AsyncIterator[None]:
    """Serialize worktree commands on one repository, within this process and across
    processes sharing the state directory. ``key``: the repository's common git directory."""
    name = str(key)
    async with _loop_lock(name), file_lock(lock_path(name, state=state)):
        yield


def kept_lock(*, state: Path | None = None) -> contextlib.AbstractAsyncContextManager[None]:
    """Serialize, across processes, reopening kept resources (a new owner adopts them) with
    garbage collection letting go of them (their owner is gone): neither acts on a lease the
    other is changing."""
    return file_lock((state or state_dir()) / "locks" / "kept.lock")
