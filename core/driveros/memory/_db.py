"""Connection plumbing: pragmas, migrations, the write lock with retries, rollback."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time

import aiosqlite

from driveros.memory._schema import MIGRATIONS, SCHEMA_VERSION

log = logging.getLogger(__name__)
#: Short on purpose: waits longer than this happen in our own cancellable retry loop.
BUSY_MS = 1000


def is_busy(exc: sqlite3.Error) -> bool:
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg


async def begin_immediate(conn: aiosqlite.Connection, *, patience: float = 60.0) -> None:
    """Take the write lock, retrying past ``busy_timeout`` while others hold it."""
    deadline = time.monotonic() + patience
    delay = 0.01
    while True:
        try:
            await conn.execute("BEGIN IMMEDIATE")
            return
        except asyncio.CancelledError:
            # The BEGIN still runs on aiosqlite's thread; undo it once it lands.
            await asyncio.shield(rollback(conn))
            raise
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() > deadline:
                raise
            log.debug("memory write lock busy; retrying in %.2fs", delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)


async def rollback(conn: aiosqlite.Connection) -> None:
    """Roll back whatever is open. Queued behind any statement still running on the
    connection's thread, so it also undoes a BEGIN that completes after a cancellation."""
    try:
        await conn.execute("ROLLBACK")
    except (sqlite3.Error, ValueError) as exc:  # no transaction, or the connection is gone
        log.debug("rollback: %s", exc)


async def prepare(conn: aiosqlite.Connection) -> None:
    await conn.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
    await _migrate(conn)


async def _migrate(conn: aiosqlite.Connection) -> None:
    deadline = time.monotonic() + 60.0
    while True:
        try:
            async with conn.execute("PRAGMA journal_mode = WAL") as cur:
                row = await cur.fetchone()
            break
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)
    if row is None or str(row[0]).lower() != "wal":
        raise sqlite3.OperationalError(f"could not switch to WAL (journal_mode={row})")
    await conn.execute("PRAGMA synchronous = NORMAL")
    await conn.execute("PRAGMA foreign_keys = ON")
    async with conn.execute("PRAGMA user_version") as cur:
        version = int((await cur.fetchone() or (0,))[0])
    if version > SCHEMA_VERSION:
        raise sqlite3.DatabaseError(
            f"schema version {version} is newer than this driveros understands "
            f"({SCHEMA_VERSION}); upgrade driveros"
        )
    if version == SCHEMA_VERSION:
        return
    await begin_immediate(conn)
    try:
        async with conn.execute("PRAGMA user_version") as cur:
            version = int((await cur.fetchone() or (0,))[0])
        for number in range(version, SCHEMA_VERSION):
            for statement in _statements(MIGRATIONS[number]):
                await conn.execute(statement)
            await conn.execute(f"PRAGMA user_version = {number + 1}")
        await conn.execute("COMMIT")
    except BaseException:
        await asyncio.shield(rollback(conn))
        raise


def _statements(script: str) -> list[str]:
    """Split a migration into statements (``executescript`` would commit our transaction)."""
    out: list[str] = []
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out
