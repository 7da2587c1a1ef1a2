"""The memory database's health: integrity checks, salvage, and errors that say what is wrong.

SQLite reports a damaged file as ``database disk image is malformed``, a read-only medium as
``unable to open database file`` or ``attempt to write a readonly database`` and a full disk
as ``database or disk is full`` or ``disk I/O error``. :func:`store_error` turns each into the
typed error of driveros' one tree with a message a person can act on; :func:`check` and
:func:`salvage` back the open-time ``quick_check`` and ``driveros memory doctor``.

Everything here blocks (it talks to SQLite and the file system): call it through
``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import errno
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from urllib.request import pathname2url

from pydantic import ValidationError

from driveros._errors import (
    MemoryDamagedError,
    MemoryDiskFullError,
    MemoryReadOnlyError,
    MemoryStoreError,
)
from driveros.memory._carve import carve_facts
from driveros.memory._check import (
    fts_problems,
    identity,
    known_sound,
    remember_sound,
    text_problems,
)
from driveros.memory._models import Fact
from driveros.memory._rows import FACT_COLUMNS, fact_from_row
from driveros.memory._wal import holders_of_deleted

#: Less free space than this after an I/O error means the disk is (as good as) full: SQLite
#: needs room for its WAL and shared-memory files before it writes a single page.
_NEARLY_FULL = 1 << 20
#: Unreadable fact ids stepped over one by one before salvage gives up on the rest.
_MAX_GAP = 10_000
_READ_ONLY_ERRNOS = (errno.EROFS, errno.EACCES, errno.EPERM)
_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


def damaged(path: Path) -> MemoryDamagedError:
    return MemoryDamagedError(
        f"memory database {path} is damaged: run `driveros memory doctor`",
        path=str(path),
    )


def read_only(path: Path) -> MemoryReadOnlyError:
    return MemoryReadOnlyError(f"memory database {path} is read-only", path=str(path))


def disk_full(path: Path) -> MemoryDiskFullError:
    return MemoryDiskFullError(f"no space left on device writing {path}", path=str(path))


def _primary(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


#: What SQLite (through Python) raises for a damaged file: its own errors, and undecodable
#: bytes where text should be (in a row, or in an error message quoting a garbled schema).
DAMAGE_ERRORS = (sqlite3.DatabaseError, UnicodeDecodeError)


def is_damage(exc: BaseException) -> bool:
    """SQLITE_CORRUPT or SQLITE_NOTADB, or text that is not text: the file is not sound."""
    if isinstance(exc, UnicodeDecodeError):
        return True
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = _primary(exc)
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return True
    text = str(exc).lower()
    # Python's own "Could not decode to UTF-8 column …" comes as an OperationalError.
    return "malformed" in text or "not a database" in text or "decode to utf-8" in text


def _existing(path: Path) -> Path:
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def _medium(path: Path) -> str | None:
    """``"read-only"`` or ``"full"`` when the file system holding ``path`` is, else None."""
    try:
        where = _existing(path)
        stats = os.statvfs(where)
    except OSError:
        return None
    if stats.f_flag & os.ST_RDONLY:
        return "read-only"
    if stats.f_bavail * stats.f_frsize < _NEARLY_FULL:
        return "full"
    # chattr +i, or a directory root may not write to (access() knows both).
    folder = path.parent if path.parent.exists() else where
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return "read-only"
    return None


def store_error(exc: BaseException, path: Path, *, op: str) -> MemoryStoreError:
    """The typed error for ``exc`` (an SQLite or OS error) met while ``op`` ran on ``path``.

    Damage, a read-only medium and a full disk get their own subclasses and messages; any
    other failure keeps SQLite's words. Blocks briefly (``statvfs``/``access``) to tell a
    read-only or full medium from other I/O errors.
    """
    if isinstance(exc, MemoryStoreError):
        return exc
    kind: str | None = None
    if is_damage(exc):
        kind = "damaged"
    elif isinstance(exc, sqlite3.Error):
        code = _primary(exc)
        text = str(exc).lower()
        if code == sqlite3.SQLITE_READONLY or "readonly" in text or "read-only" in text:
            kind = "read-only"
        elif code == sqlite3.SQLITE_FULL or "disk is full" in text:
            kind = "full"
        elif code in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, None):
            kind = _medium(path)
    elif isinstance(exc, OSError):
        if exc.errno in _FULL_ERRNOS:
            kind = "full"
        elif exc.errno in _READ_ONLY_ERRNOS:
            kind = "read-only"
    match kind:
        case "damaged" if op not in ("open", "check"):
            # Found half-way through a command: say which one, and where to go next.
            return MemoryDamagedError(f"memory {op} failed: {damaged(path)}", path=str(path), op=op)
        case "damaged":
            return damaged(path)
        case "read-only":
            return read_only(path)
        case "full":
            return disk_full(path)
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    if op == "open":
        return MemoryStoreError(f"cannot open memory {path}: {reason}", path=str(path), op=op)
    return MemoryStoreError(f"memory {op} failed: {reason}", path=str(path), op=op)


def _connect_read_only(path: Path, *, immutable: bool = False) -> sqlite3.Connection:
    """A connection that can never write ``path``, on a read-only medium too. ``immutable``:
    read the main file alone, creating no ``-wal``/``-shm`` file and taking no lock."""
    base = "file:" + pathname2url(str(path))
    first = "?mode=ro&immutable=1" if immutable else "?mode=ro"
    conn = sqlite3.connect(base + first, uri=True, isolation_level=None)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
    except DAMAGE_ERRORS as exc:
        conn.close()
        if is_damage(exc):
            raise
        # A WAL database on a read-only medium without its -shm file can only be read as
        # immutable (nobody else can be writing it there anyway).
        conn = sqlite3.connect(base + "?mode=ro&immutable=1", uri=True, isolation_level=None)
    conn.text_factory = _lenient_text
    return conn


def _lenient_text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def check(path: Path, *, full: bool = False) -> list[str]:
    """What is wrong with the database at ``path``; ``[]`` when it is sound or does not
    exist. ``quick_check`` (linear, checks structure) unless ``full``: ``integrity_check``
    (indexes against their tables too), every text value's UTF-8 and FTS5's own
    ``integrity-check`` (in a transaction that is rolled back). Never changes the file."""
    return _check(path, full=full)[0]


def _check(path: Path, *, full: bool) -> tuple[list[str], bool]:
    """:func:`check`'s problems, and whether every part of the check could run."""
    if not path.exists():
        return [], True
    pragma = "integrity_check" if full else "quick_check"
    try:
        conn = _connect_read_only(path)
    except DAMAGE_ERRORS as exc:
        if is_damage(exc):
            return [_words(exc)], True
        raise
    try:
        rows = [str(r[0]) for r in conn.execute(f"PRAGMA {pragma}").fetchall()]
        if rows != ["ok"]:
            return rows, True
        rows = text_problems(conn) if full else []
    except DAMAGE_ERRORS as exc:
        if is_damage(exc):
            return [_words(exc)], True
        raise
    finally:
        conn.close()
    if not full or rows:
        return rows, True
    fts = fts_problems(path)
    return (fts or []), fts is not None


def open_check(path: Path) -> list[str]:
    """The full :func:`check` of a database about to be opened for writing, skipped when
    this very file (same device, inode, size and mtime, and the same ``-wal``) passed it
    before; a sound and complete result is remembered in the state directory."""
    if not path.exists() or known_sound(path):
        return []
    before = identity(path)
    problems, complete = _check(path, full=True)
    if not problems and complete and before is not None:
        remember_sound(path, before)
    return problems


def _words(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "database disk image is malformed (undecodable text)"
    return str(exc)


@dataclass
class Salvage:
    """The facts that could still be read from a (damaged) database, oldest first."""

    facts: list[Fact] = field(default_factory=list)
    #: Some rows could not be read (or decoded) and were stepped over.
    gaps: bool = False
    #: False when reading stopped early (too long a stretch of unreadable rows).
    complete: bool = True


def salvage(path: Path, *, scope: str | None) -> Salvage:
    """Read every fact row of ``scope`` (None: every scope) that can still be read: through
    SQLite, stepping over unreadable rows by id, and when SQLite cannot read everything (the
    schema's own pages may be the damaged ones) straight from the file's pages.
    Never writes ``path``."""
    # A live process whose -wal was deleted: read the main file alone, making no new -wal.
    out = _salvage_sql(path, immutable=bool(holders_of_deleted(path)))
    if out.gaps or not out.complete:
        known = {f.id for f in out.facts}
        carved = [f for f in carve_facts(path) if f.id not in known]
        out.facts = sorted([*out.facts, *carved], key=lambda f: f.id)
        out.complete = True
    if scope is not None:
        out.facts = [f for f in out.facts if f.scope == scope]
    return out


def _salvage_sql(path: Path, *, immutable: bool) -> Salvage:
    out = Salvage()
    try:
        conn = _connect_read_only(path, immutable=immutable)
    except DAMAGE_ERRORS:
        out.gaps, out.complete = True, False
        return out
    sql = f"SELECT {FACT_COLUMNS} FROM facts WHERE id > ? ORDER BY id LIMIT 1"  # noqa: S608
    try:
        last, gap = 0, 0
        while gap <= _MAX_GAP:
            try:
                row = conn.execute(sql, (last,)).fetchone()
            except DAMAGE_ERRORS:
                last, gap = last + 1, gap + 1
                out.gaps = True
                continue
            if row is None:
                break
            last, gap = int(row[0]), 0
            try:
                out.facts.append(fact_from_row(row))
            except (ValidationError, TypeError, ValueError):
                out.gaps = True
        else:
            out.complete = False
    finally:
        conn.close()
    return out


async def check_integrity(path: Path, *, full: bool = True) -> list[str]:
    """SQLite's ``integrity_check`` (``quick_check`` unless ``full``) of the memory database
    at ``path``, read-only: ``[]`` when sound (or absent), else SQLite's findings.

    Raises :class:`~driveros.MemoryStoreError` when the file cannot be read at all.
    """
    # First, before any connection could make a second -wal file (see _wal).
    holders = await asyncio.to_thread(holders_of_deleted, path)
    if holders:
        return [
            f"process {pid} has it open with its {suffix} file deleted: its commits since the "
            "last checkpoint are only in that process; end it (it writes them back when it "
            "closes, unless another process made new -wal/-shm files meanwhile)"
            for pid, suffix in holders
        ]
    try:
        return await asyncio.to_thread(check, path, full=full)
    except (sqlite3.Error, OSError) as exc:
        raise await asyncio.to_thread(store_error, exc, path, op="check") from exc


async def salvage_facts(path: Path, *, scope: str | None) -> Salvage:
    """Every fact of ``scope`` (None: all) still readable from ``path``; never writes it."""
    return await asyncio.to_thread(salvage, path, scope=scope)
