"""The full health check's parts beyond ``PRAGMA integrity_check``, and its cache.

SQLite's ``integrity_check`` checks tables against their indexes, but (before 3.44) not the
FTS5 index, and never whether text is UTF-8 (SQLite stores whatever bytes it is given; Python
fails to decode them later). :func:`text_problems` and :func:`fts_problems` cover those.
A full check reads the whole file, so a sound result is remembered in the state directory
(``<state>/memory/checked.json``) by the file's identity: device, inode, size and
modification time of the database and of its ``-wal`` file. Any change to either (a write, a
checkpoint, bytes flipped on disk) makes the next open check again.

Everything here blocks: call it through ``asyncio.to_thread``.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from pathlib import Path

from driveros._atomic import write_atomic
from driveros.memory._place import memory_dir

log = logging.getLogger(__name__)

_CACHE = "checked.json"
_CACHE_MAX = 256
#: Every text column of the schema, per table, with the column that names the row.
_TEXT_COLUMNS: dict[str, tuple[str, tuple[str, ...]]] = {
    "facts": (
        "id",
        (
            "scope",
            "text",
            "status",
            "run_id",
            "model",
            "task",
            "source",
            "created_at",
            "updated_at",
            "why",
        ),
    ),
    "changes": (
        "id",
        ("batch", "at", "scope", "op", "before_status", "after_status", "before_why", "run_id"),
    ),
    "meta": ("key", ("key", "value")),
}
_BUSY_S = 5.0
#: Rows joined into one string per UTF-8 check (see text_problems).
_STRETCH = 4096
#: A modification this recent may share its mtime with a later one (see remember_sound).
_RACY_NS = 2_000_000_000


def text_problems(conn: sqlite3.Connection) -> list[str]:
    """One line per stored value that is not valid UTF-8 (``conn`` may be read-only).

    SQLite joins each stretch of rows into one byte string (values separated by NUL, which
    ends any multi-byte sequence, so a bad value cannot hide across a join) and Python
    decodes it once; only a stretch that fails is read again row by row to name the rows."""
    problems: list[str] = []
    tables = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    for table, (key, columns) in _TEXT_COLUMNS.items():
        if table not in tables:
            continue
        low, high = conn.execute(f"SELECT min(rowid), max(rowid) FROM {table}").fetchone()  # noqa: S608
        if low is None:
            continue
        joined = " || char(0) || ".join(f"ifnull({c}, '')" for c in columns)
        sql = (
            f"SELECT CAST(group_concat({joined}, char(0)) AS BLOB) FROM {table} "  # noqa: S608
            "WHERE rowid BETWEEN ? AND ?"
        )
        for first in range(int(low), int(high) + 1, _STRETCH):
            last = first + _STRETCH - 1
            [raw] = conn.execute(sql, (first, last)).fetchone()
            try:
                bytes(raw or b"").decode("utf-8")
            except UnicodeDecodeError:
                problems += _rows_with_bad_text(conn, table, key, columns, first, last)
    return problems


def _rows_with_bad_text(
    conn: sqlite3.Connection,
    table: str,
    key: str,
    columns: tuple[str, ...],
    first: int,
    last: int,
) -> list[str]:
    problems: list[str] = []
    cols = ", ".join(f"CAST({c} AS BLOB)" for c in columns)
    sql = (
        f"SELECT CAST({key} AS BLOB), {cols} FROM {table} "  # noqa: S608 (fixed names)
        "WHERE rowid BETWEEN ? AND ? ORDER BY rowid"
    )
    for row in conn.execute(sql, (first, last)):
        for name, raw in zip(columns, row[1:], strict=True):
            if raw is None:
                continue
            try:
                bytes(raw).decode("utf-8")
            except UnicodeDecodeError:
                which = bytes(row[0] or b"?").decode("utf-8", "replace")
                problems.append(f"{table} {key} {which}: {name} is not valid UTF-8")
    return problems


def fts_problems(path: Path) -> list[str] | None:
    """FTS5's own ``integrity-check`` of the facts index. It needs a writable connection, so it
    runs inside a transaction that is always rolled back (nothing is ever changed). None when
    it could not run (a read-only medium, a full disk, the write lock held throughout)."""
    try:
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=_BUSY_S)
    except sqlite3.Error:
        return None
    try:
        found = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'facts_fts' AND type = 'table'"
        ).fetchone()
        if found is None:
            return []
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("INSERT INTO facts_fts (facts_fts) VALUES ('integrity-check')")
        finally:
            conn.execute("ROLLBACK")
    except sqlite3.DatabaseError as exc:
        return [f"full-text index: {exc}"] if _corrupt(exc) else None
    finally:
        conn.close()
    return []


def _corrupt(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and int(code) & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return True
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


def identity(path: Path) -> list[int] | None:
    """Device, inode, size and mtime of the database and its ``-wal`` file (zeros when
    there is none); None when the database cannot be stat'ed."""
    try:
        st = path.stat()
    except OSError:
        return None
    try:
        wal = Path(f"{path}-wal").stat()
        tail = [wal.st_ino, wal.st_size, wal.st_mtime_ns]
    except OSError:
        tail = [0, 0, 0]
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, *tail]


def _cache_file() -> Path:
    return memory_dir() / _CACHE


def _read_cache() -> dict[str, list[int]]:
    try:
        data = json.loads(_cache_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def known_sound(path: Path) -> bool:
    """True when this very file (same identity) passed the full check before."""
    ident = identity(path)
    return ident is not None and _read_cache().get(str(path.resolve())) == ident


def remember_sound(path: Path, ident: list[int]) -> None:
    """Record that ``path`` with identity ``ident`` (taken before the check) passed.

    Not when either file changed in the last :data:`_RACY_NS`: a file system's clock ticks
    coarsely, so a change right after the check could keep the same mtime (git's "racy
    timestamps"); such a file is checked again next time."""
    if identity(path) != ident:  # changed while it was checked: check again next time
        return
    now = time.time_ns()
    if now - ident[3] < _RACY_NS or now - ident[6] < _RACY_NS:
        return
    cache = _read_cache()
    cache.pop(str(path.resolve()), None)
    cache[str(path.resolve())] = ident
    while len(cache) > _CACHE_MAX:
        cache.pop(next(iter(cache)))
    target = _cache_file()
    try:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomic(target, json.dumps(cache).encode("utf-8"), perms=0o600)
    except OSError as exc:  # a read-only state directory: the check just runs every time
        log.debug("memory: cannot record the check of %s: %s", path, exc)
