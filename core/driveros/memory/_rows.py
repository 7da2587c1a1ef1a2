"""Row-level helpers shared by the store: the fact row shape and the logged write statements.

Every status change writes a ``changes`` row in the same transaction, which is what ``undo``
replays backwards.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite

from driveros._errors import MemoryStoreError
from driveros.memory._models import Fact, MemoryStats, Provenance
from driveros.memory._search import pack

FACT_COLUMNS = (
    "id, scope, text, status, run_id, model, task, source, created_at, updated_at, "
    "superseded_by, why"
)
_NAMES = FACT_COLUMNS.split(", ")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def normalize_text(text: str) -> str:
    """The form used to tell two facts are the same statement."""
    return " ".join(text.lower().split()).rstrip(".")


def fact_from_row(row: Sequence[Any]) -> Fact:
    return Fact(**dict(zip(_NAMES, row, strict=True)))


async def pin(db: aiosqlite.Connection, model: str, dim: int) -> None:
    """Pin the store to ``model`` unless it is pinned already; refuse another model."""
    await db.execute(
        "INSERT OR IGNORE INTO meta (key, value) VALUES ('embed_model', ?), ('embed_dim', ?)",
        (model, str(dim)),
    )
    async with db.execute("SELECT value FROM meta WHERE key = 'embed_model'") as cur:
        row = await cur.fetchone()
    pinned = None if row is None else str(row[0])
    if pinned != model:  # another process pinned a different model since we checked
        raise MemoryStoreError(
            f"memory is pinned to embedding model {pinned!r}, not {model!r}; run "
            "`driveros memory reembed`",
            pinned=pinned,
            configured=model,
        )


async def insert_fact(
    db: aiosqlite.Connection,
    batch: str,
    scope: str,
    text: str,
    prov: Provenance,
    vector: Sequence[float] | None,
    model: str | None,
) -> int:
    """Insert an active fact (and its vector for ``model``); log it in ``batch``."""
    at = now_iso()
    cur = await db.execute(
        "INSERT INTO facts (scope, text, status, run_id, model, task, source, created_at, "
        "updated_at, why) VALUES (?, ?, 'active', ?, ?, ?, ?, ?, ?, ?)",
        (
            scope,
            text,
            prov.run_id,
            prov.model,
            prov.task,
            prov.source,
            at,
            at,
            f"{prov.source} in run {prov.run_id or '-'}",
        ),
    )
    fact_id = int(cur.lastrowid or 0)
    if vector is not None and model is not None:
        await db.execute(
            "INSERT INTO vectors (fact_id, model, dim, vec) VALUES (?, ?, ?, ?)",
            (fact_id, model, len(vector), pack(vector)),
        )
    await db.execute(
        "INSERT INTO changes (batch, at, scope, op, fact_id, before_status, after_status, "
        "run_id) VALUES (?, ?, ?, ?, ?, NULL, 'active', ?)",
        (batch, at, scope, prov.source, fact_id, prov.run_id),
    )
    return fact_id


async def set_status(
    db: aiosqlite.Connection,
    batch: str,
    op: str,
    fact: Fact,
    status: str,
    superseded_by: int | None,
    why: str,
    run_id: str = "",
) -> None:
    """Change a fact's status, remembering the previous one in ``batch`` for undo."""
    at = now_iso()
    await db.execute(
        "UPDATE facts SET status = ?, superseded_by = ?, why = ?, updated_at = ? WHERE id = ?",
        (status, superseded_by, why, at, fact.id),
    )
    await db.execute(
        "INSERT INTO changes (batch, at, scope, op, fact_id, before_status, after_status, "
        "before_superseded_by, before_why, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            batch,
            at,
            fact.scope,
            op,
            fact.id,
            fact.status,
            status,
            fact.superseded_by,
            fact.why,
            run_id,
        ),
    )


async def undo_batch(db: aiosqlite.Connection, batch: str, scope: str) -> list[int]:
    """Revert the latest change batch of ``scope`` (logged in ``batch``); the touched ids.

    What the batch retired becomes active again; what it added is retired, never deleted.
    """
    async with db.execute(
        "SELECT batch FROM changes WHERE scope = ? AND undone = 0 AND op != 'undo' "
        "ORDER BY id DESC LIMIT 1",
        (scope,),
    ) as cur:
        rows = list(await cur.fetchall())
    if not rows:
        raise MemoryStoreError("nothing to undo in this scope", scope=scope)
    last = str(rows[0][0])
    async with db.execute(
        "SELECT fact_id, before_status, before_superseded_by, before_why FROM changes "
        "WHERE batch = ? ORDER BY id DESC",
        (last,),
    ) as cur:
        changes = list(await cur.fetchall())
    touched: list[int] = []
    for fid, before_status, before_sup, before_why in changes:
        async with db.execute(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE id = ?",  # noqa: S608 (fixed columns)
            (int(fid),),
        ) as cur:
            fact = fact_from_row(await cur.fetchone() or ())
        if before_status is None:
            await set_status(db, batch, "undo", fact, "forgotten", None, "undone")
        else:
            await set_status(
                db,
                batch,
                "undo",
                fact,
                str(before_status),
                None if before_sup is None else int(before_sup),
                str(before_why or ""),
            )
        touched.append(int(fid))
    await db.execute("UPDATE changes SET undone = 1 WHERE batch = ?", (last,))
    return touched


async def read_stats(db: aiosqlite.Connection, path: Path, scope: str) -> MemoryStats:
    """Counts per status in ``scope``, scopes, the pinned model, vectors and the file size."""

    async def one(sql: str, params: Sequence[Any] = ()) -> Any:
        async with db.execute(sql, params) as cur:
            row = await cur.fetchone()
        return None if row is None else row[0]

    async with db.execute(
        "SELECT status, count(*) FROM facts WHERE scope = ? GROUP BY status", (scope,)
    ) as cur:
        counts = {str(r[0]): int(r[1]) for r in await cur.fetchall()}
    scopes = await one("SELECT count(DISTINCT scope) FROM facts")
    model = await one("SELECT value FROM meta WHERE key = 'embed_model'")
    dim = await one("SELECT value FROM meta WHERE key = 'embed_dim'")
    vectors = await one("SELECT count(*) FROM vectors")
    missing = await one(
        "SELECT count(*) FROM facts f LEFT JOIN vectors v ON v.fact_id = f.id "
        "WHERE f.scope = ? AND f.status = 'active' AND v.fact_id IS NULL",
        (scope,),
    )
    version = await one("PRAGMA user_version")
    files = (path, Path(f"{path}-wal"))
    size = await asyncio.to_thread(lambda: sum(p.stat().st_size for p in files if p.exists()))
    return MemoryStats(
        path=str(path),
        scope=scope,
        schema_version=int(version),
        active=counts.get("active", 0),
        superseded=counts.get("superseded", 0),
        forgotten=counts.get("forgotten", 0),
        scopes=int(scopes),
        embed_model=None if model is None else str(model),
        embed_dim=int(dim) if dim else None,
        vectors=int(vectors),
        missing_vectors=int(missing) if model else 0,
        size_bytes=size,
    )
