"""The ``-wal`` and ``-shm`` files deleted under an open store.

While a process has the database open, its connection writes commits to the ``-wal`` file
it opened and finds them through the ``-shm`` index. Delete both and that process keeps
using the unlinked files, while the next process to open the database makes new ones: two
logs for one database. Whichever closes last checkpoints its own log into the file and
deletes the ``-wal`` path (the other's log), and the other's commits are gone, silently.

So: a store remembers the identity of the two files it opened (:class:`WalWatch`) and
refuses to write once either path is gone or is another file; a store about to open the
database first asks whether a live process holds a deleted ``-wal``/``-shm`` of it
(:func:`holders_of_deleted`, through ``/proc/locks`` and that process's ``/proc/PID/fd``) and
refuses to open it. A store whose files were replaced closes without checkpointing
(:func:`close_guard`), so it cannot delete the new log. Linux only (``/proc``); elsewhere
these checks find nothing.

Everything here blocks briefly: call it through ``asyncio.to_thread``.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from urllib.request import pathname2url

_SUFFIXES = ("-wal", "-shm")


def _ident(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


@dataclass(frozen=True)
class WalWatch:
    """The ``-wal`` and ``-shm`` files a store's connections opened."""

    db: Path
    files: tuple[tuple[int, int] | None, ...]

    @classmethod
    def take(cls, db: Path) -> WalWatch:
        return cls(db, tuple(_ident(Path(f"{db}{s}")) for s in _SUFFIXES))

    def lost(self) -> str | None:
        """``"deleted"`` or ``"replaced"`` when a file the store opened is no longer at its
        path; None while both are the ones it opened (or it never had them)."""
        for suffix, before in zip(_SUFFIXES, self.files, strict=True):
            if before is None:
                continue
            now = _ident(Path(f"{self.db}{suffix}"))
            if now is None:
                return "deleted"
            if now != before:
                return "replaced"
        return None


#: The watches of the stores open in this process, by database path (``/proc`` cannot tell
#: this process's connections apart: SQLite shares one ``-shm`` mapping between them).
_OPEN: dict[str, list[WalWatch]] = {}


def opened(watch: WalWatch) -> None:
    _OPEN.setdefault(str(watch.db.resolve()), []).append(watch)


def closed(watch: WalWatch) -> None:
    watches = _OPEN.get(str(watch.db.resolve()), [])
    if watch in watches:
        watches.remove(watch)


def lost_here(db: Path) -> str | None:
    """``"deleted"``/``"replaced"`` when a store open in this process on ``db`` lost its
    ``-wal``/``-shm`` files: a new connection here would make a second log."""
    for watch in _OPEN.get(str(db.resolve()), []):
        lost = watch.lost()
        if lost is not None:
            return lost
    return None


def _lock_holders(db: Path) -> set[int]:
    """Processes other than this one holding a POSIX lock on ``db`` (``/proc/locks``)."""
    try:
        st = db.stat()
        text = Path("/proc/locks").read_text(encoding="ascii", errors="replace")
    except OSError:
        return set()
    want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids: set[int] = set()
    for line in text.splitlines():
        fields = line.split()
        # "1: POSIX  ADVISORY  READ 1234 08:01:56789 128 128" ("->" marks a waiter)
        if "->" in fields:
            fields.remove("->")
        if len(fields) >= 6 and fields[5] == want and fields[4].isdigit():
            pids.add(int(fields[4]))
    pids.discard(os.getpid())
    return pids


def holders_of_deleted(db: Path) -> list[tuple[int, str]]:
    """Live processes (other than this one) that have ``db`` open with its ``-wal`` or
    ``-shm`` file deleted: ``(pid, "-wal")`` pairs. Only processes this user may inspect."""
    found: list[tuple[int, str]] = []
    real = str(db.resolve())
    targets = {f"{real}{s} (deleted)": s for s in _SUFFIXES}
    for pid in sorted(_lock_holders(db)):
        fds = Path(f"/proc/{pid}/fd")
        try:
            links = [str(fd.readlink()) for fd in fds.iterdir()]
        except OSError:
            continue
        for suffix in sorted({targets[link] for link in links if link in targets}):
            found.append((pid, suffix))
    return found


def describe(db: Path, holders: list[tuple[int, str]]) -> str:
    pid, suffix = holders[0]
    return (
        f"memory database {db} is open in process {pid}, whose {suffix} file was deleted: "
        f"opening it now would split that process's commits from new ones; end that "
        f"process first (it writes what it holds into the database when it closes), then "
        f"run `driveros memory doctor`"
    )


def close_guard(db: Path) -> sqlite3.Connection | None:
    """A read-only connection holding a shared lock on ``db``, to close *after* a store whose
    ``-wal`` was replaced: while it is open the store's own connections cannot checkpoint or
    delete the ``-wal`` path on close, and being read-only it does neither itself."""
    try:
        conn = sqlite3.connect(
            "file:" + pathname2url(str(db)) + "?mode=ro", uri=True, check_same_thread=False
        )
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
    except sqlite3.Error:
        return None
    return conn
