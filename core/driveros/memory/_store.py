"""``MemoryStore``: facts about one repository in an embedded SQLite file (aiosqlite, WAL).

Every write is one ``BEGIN IMMEDIATE`` transaction, retried while another process holds the
write lock, so concurrent writers serialize and lose nothing, and a process killed mid-write
leaves the previous committed state. Nothing is hard-deleted: retired facts keep their row,
their provenance and why they were retired, and every change is logged for ``undo``.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import aiosqlite

from driveros._errors import MemoryDamagedError, MemoryStoreError
from driveros.memory import _health as health
from driveros.memory._db import BUSY_MS, begin_immediate, prepare, rollback
from driveros.memory._embed import Embedder
from driveros.memory._models import Fact, MemoryStats, Provenance
from driveros.memory._reader import Reader
from driveros.memory._rows import (
    FACT_COLUMNS,
    fact_from_row,
    insert_fact,
    normalize_text,
    pin,
    read_stats,
    set_status,
    undo_batch,
)
from driveros.memory._search import POSTING_BUDGET, pack, query_words
from driveros.memory._wal import (
    WalWatch,
    close_guard,
    closed,
    describe,
    holders_of_deleted,
    lost_here,
    opened,
)

log = logging.getLogger(__name__)


class ApplyResult:
    """Ids written by one transaction."""

    def __init__(self) -> None:
        self.added: list[int] = []
        self.updated: list[tuple[int, int]] = []
        self.retired: list[int] = []


class MemoryStore:
    """Long-term memory of one workspace. Open with :meth:`open`; close with :meth:`aclose`.

    Every public call is bounded by ``timeout`` seconds and raises
    :class:`~driveros.MemoryStoreError` (with ``path`` and ``op`` context) on any failure.
    """

    def __init__(
        self,
        conn: aiosqlite.Connection,
        reader: Reader,
        *,
        path: Path,
        scope: str,
        embedder: Embedder | None,
        timeout: float | None,
    ) -> None:
        self._conn = conn
        self._reader = reader
        self.path = path
        self.scope = scope
        self.embedder = embedder
        self.timeout = timeout
        self._lock = asyncio.Lock()
        #: Set once SQLite reported damage: from then on nothing is written.
        self.damaged = False
        #: See ``POSTING_BUDGET``; an attribute so tests can exercise the cut-off cheaply.
        self.posting_budget = POSTING_BUDGET
        #: Databases found in the workspace and ignored (see ``open_memory_store``).
        self.notices: tuple[str, ...] = ()
        #: A database driveros did not create: recall labels none of its facts verified.
        self.foreign = False
        #: The -wal/-shm files this store opened (see ``_wal``); None before ``open`` ends.
        self._watch: WalWatch | None = None
        #: Whether the full check passed (at open, or before the first write).
        self._checked = False

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def open(
        cls,
        path: Path,
        *,
        scope: str,
        embedder: Embedder | None = None,
        timeout: float | None = 30.0,
        check: Literal["full", "quick"] = "full",
    ) -> MemoryStore:
        """Open (creating and migrating as needed) the database at ``path``.

        An existing file must pass the full check before anything is written to it
        (``integrity_check``, UTF-8 of every text value, FTS5 ``integrity-check``;
        remembered per file identity in the state directory): at open, or with ``check=
        "quick"`` SQLite's ``quick_check`` at open and the full check before the first
        write (recall stays fast). A damaged file raises
        :class:`~driveros.MemoryDamagedError`. A read-only medium
        or a full disk raise :class:`~driveros.MemoryReadOnlyError` /
        :class:`~driveros.MemoryDiskFullError`.
        """
        try:
            async with asyncio.timeout(timeout):
                await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
                # Before any connection (the check's too) could make a second -wal file.
                holders = await asyncio.to_thread(holders_of_deleted, path)
                if holders:
                    raise MemoryStoreError(describe(path, holders), path=str(path), op="open")
                if here := await asyncio.to_thread(lost_here, path):
                    raise MemoryStoreError(
                        f"memory database {path}: its -wal/-shm files were {here} while this "
                        "process had it open; run `driveros memory doctor`",
                        path=str(path),
                        op="open",
                    )
                full = check == "full"
                run_check = health.open_check if full else health.check
                problems = await asyncio.to_thread(run_check, path)
                if problems:
                    error = health.damaged(path)
                    error.context["problems"] = problems[:20]
                    raise error
                conn = await aiosqlite.connect(
                    str(path), isolation_level=None, timeout=BUSY_MS / 1000
                )
                try:
                    await prepare(conn)
                    reader = await asyncio.to_thread(Reader.open, path, scope)
                    watch = await asyncio.to_thread(WalWatch.take, path)
                except BaseException:
                    await conn.close()
                    raise
        except TimeoutError as exc:
            raise MemoryStoreError(
                f"opening memory {path} timed out after {timeout}s", path=str(path), op="open"
            ) from exc
        except (sqlite3.Error, OSError, UnicodeDecodeError) as exc:
            raise await asyncio.to_thread(health.store_error, exc, path, op="open") from exc
        store = cls(conn, reader, path=path, scope=scope, embedder=embedder, timeout=timeout)
        store._watch = watch
        store._checked = full
        opened(watch)
        return store

    async def aclose(self) -> None:
        """Close the connections. When another process replaced the ``-wal``/``-shm`` files
        this store opened, close without checkpointing: the ``-wal`` path is not ours."""
        if self._watch is not None:
            closed(self._watch)
        lost = None if self._watch is None else await asyncio.to_thread(self._watch.lost)
        guard = await asyncio.to_thread(close_guard, self.path) if lost == "replaced" else None
        try:
            await asyncio.to_thread(self._reader.close)
            await self._conn.close()
        finally:
            if guard is not None:
                await asyncio.to_thread(guard.close)
        if self.embedder is not None:
            await self.embedder.aclose()

    async def __aenter__(self) -> MemoryStore:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ plumbing

    @asynccontextmanager
    async def _op(
        self, name: str, *, timeout: float | Literal["default"] | None = "default"
    ) -> AsyncIterator[None]:
        limit = self.timeout if timeout == "default" else timeout
        try:
            async with asyncio.timeout(limit), self._lock:
                yield
        except TimeoutError as exc:
            raise MemoryStoreError(
                f"memory {name} timed out after {limit}s", path=str(self.path), op=name
            ) from exc
        except (sqlite3.Error, OSError, UnicodeDecodeError) as exc:
            error = await asyncio.to_thread(health.store_error, exc, self.path, op=name)
            if isinstance(error, MemoryDamagedError):
                self.damaged = True
            raise error from exc

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[aiosqlite.Connection]:
        if not self.damaged and not self._checked:
            problems = await asyncio.to_thread(health.open_check, self.path)
            self.damaged, self._checked = bool(problems), not problems
        if self.damaged:
            raise health.damaged(self.path)
        await begin_immediate(self._conn)
        try:
            # Under the write lock: are our -wal/-shm still the files at those paths?
            lost = None if self._watch is None else await asyncio.to_thread(self._watch.lost)
            if lost is not None:
                raise MemoryStoreError(
                    f"memory database {self.path}: its -wal/-shm files were {lost} while "
                    "this process had it open; refusing to write (another process's commits "
                    "could be lost): run `driveros memory doctor`",
                    path=str(self.path),
                    op="write",
                )
            yield self._conn
        except BaseException:
            await asyncio.shield(rollback(self._conn))
            raise
        try:
            await self._conn.execute("COMMIT")
        except BaseException:
            await asyncio.shield(rollback(self._conn))
            raise

    async def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        async with self._conn.execute(sql, params) as cur:
            return list(await cur.fetchall())

    async def _meta(self, key: str) -> str | None:
        rows = await self._fetch("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    async def _facts_by_id(self, ids: Sequence[int]) -> dict[int, Fact]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = await self._fetch(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE id IN ({marks})",  # noqa: S608
            ids,
        )
        return {int(r[0]): fact_from_row(r) for r in rows}

    async def _check_pin(self, embedder: Embedder) -> str | None:
        """The pinned model; raises when ``embedder`` is a different one."""
        pinned = await self._meta("embed_model")
        if pinned is not None:
            self._refuse_other_model(pinned, embedder)
        return pinned

    def _refuse_other_model(self, pinned: str, embedder: Embedder) -> None:
        if pinned != embedder.model:
            raise MemoryStoreError(
                f"memory {self.path} is pinned to embedding model {pinned!r} but "
                f"{embedder.model!r} is configured; run `driveros memory reembed` to switch "
                f"models, or set MNEME_EMBED_MODEL={pinned}",
                path=str(self.path),
                pinned=pinned,
                configured=embedder.model,
            )

    # ------------------------------------------------------------------ recall

    async def search(self, query: str, limit: int = 8) -> list[Fact]:
        """The active facts of this scope most relevant to ``query``, best first.

        BM25 over FTS5 always; fused by reciprocal rank with cosine similarity when the store
        has an embedder. Raises when the embedder differs from the model the store is pinned to.
        """
        async with self._op("search"):
            wide = max(limit * 4, 20)
            words = query_words(query)
            model = None if self.embedder is None else self.embedder.model
            qvec: list[float] | None = None
            if self.embedder is not None and self._reader.pinned_seen == model:
                # Pinned to our model last time: embed first, then recall in a single hop.
                [qvec] = await self.embedder.embed([query])
            first = await asyncio.to_thread(
                self._reader.first, words, wide, limit, model, self.posting_budget, qvec
            )
            if self.embedder is not None and first.pinned is not None:
                self._refuse_other_model(first.pinned, self.embedder)
            if first.facts is not None or self.embedder is None:
                return first.facts or []
            [qvec] = await self.embedder.embed([query])
            lexical = first.lexical if words else None
            return await asyncio.to_thread(self._reader.finish, lexical, qvec, wide, limit)

    # ------------------------------------------------------------------ reads

    async def get(self, fact_id: int) -> Fact:
        async with self._op("show"):
            found = await self._facts_by_id([fact_id])
        if fact_id not in found:
            raise MemoryStoreError(f"no fact #{fact_id} in {self.path}", fact_id=fact_id)
        return found[fact_id]

    async def list_facts(
        self,
        *,
        status: str = "active",
        limit: int | None = None,
        all_scopes: bool = False,
        op: str = "list",
    ) -> list[Fact]:
        """Facts newest first; ``status`` is a status name or ``"all"``."""
        where, params = [], []
        if not all_scopes:
            where.append("scope = ?")
            params.append(self.scope)
        if status != "all":
            where.append("status = ?")
            params.append(status)
        sql = f"SELECT {FACT_COLUMNS} FROM facts"  # noqa: S608 (fixed column list)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        async with self._op(op):
            return [fact_from_row(r) for r in await self._fetch(sql, params)]

    async def stats(self) -> MemoryStats:
        async with self._op("stats"):
            return await read_stats(self._conn, self.path, self.scope)

    # ------------------------------------------------------------------ writes

    async def apply(
        self,
        *,
        adds: Sequence[str] = (),
        updates: Sequence[tuple[int, str]] = (),
        retires: Sequence[tuple[int, str]] = (),
        provenance: Provenance,
        op: str = "store",
    ) -> ApplyResult:
        """Write one batch atomically: new facts, replacements of old facts, retirements.

        An update whose target is no longer active (another run retired it meanwhile) is
        written as a plain addition; a retirement of an inactive fact is skipped.
        """
        texts = [*adds, *(t for _, t in updates)]
        async with self._op(op):
            vectors: list[list[float]] = []
            if self.embedder is not None and texts:
                await self._check_pin(self.embedder)
                vectors = await self.embedder.embed(texts)
            vec_by_text = dict(zip(texts, vectors, strict=False))
            batch = uuid.uuid4().hex
            result = ApplyResult()
            model = self.embedder.model if self.embedder is not None else None
            async with self._write() as db:
                if self.embedder is not None and vectors:
                    await pin(db, self.embedder.model, len(vectors[0]))
                active = await self._active_among([i for i, _ in updates] + [i for i, _ in retires])
                for text in adds:
                    result.added.append(
                        await insert_fact(
                            db, batch, self.scope, text, provenance, vec_by_text.get(text), model
                        )
                    )
                for old_id, text in updates:
                    new_id = await insert_fact(
                        db, batch, self.scope, text, provenance, vec_by_text.get(text), model
                    )
                    if old_id in active:
                        why = f"replaced by #{new_id} in run {provenance.run_id or '-'}"
                        await self._retire(
                            db, batch, old_id, "superseded", why, provenance, superseded_by=new_id
                        )
                        result.updated.append((old_id, new_id))
                    else:
                        result.added.append(new_id)
                for old_id, reason in retires:
                    if old_id in active and old_id not in {o for o, _ in result.updated}:
                        why = f"retired in run {provenance.run_id or '-'}: {reason}".rstrip(": ")
                        await self._retire(db, batch, old_id, "superseded", why, provenance)
                        result.retired.append(old_id)
            return result

    async def forget(self, fact_id: int, *, why: str = "forgotten by user") -> Fact:
        """Retire an active fact (kept, restorable with :meth:`undo`)."""
        async with self._op("forget"):
            async with self._write() as db:
                found = await self._facts_by_id([fact_id])
                if fact_id not in found:
                    raise MemoryStoreError(f"no fact #{fact_id} in {self.path}", fact_id=fact_id)
                if not found[fact_id].active:
                    raise MemoryStoreError(
                        f"fact #{fact_id} is already {found[fact_id].status}", fact_id=fact_id
                    )
                await self._retire(
                    db, uuid.uuid4().hex, fact_id, "forgotten", why, Provenance(source="manual")
                )
            return (await self._facts_by_id([fact_id]))[fact_id]

    async def undo(self, fact_id: int | None = None) -> list[Fact]:
        """Restore one retired fact, or (no id) revert the latest change batch of this scope.

        Reverting a batch restores what it retired and retires (never deletes) what it added.
        """
        async with self._op("undo"):
            async with self._write() as db:
                batch = uuid.uuid4().hex
                if fact_id is not None:
                    found = await self._facts_by_id([fact_id])
                    if fact_id not in found:
                        raise MemoryStoreError(f"no fact #{fact_id} in {self.path}")
                    if found[fact_id].active:
                        raise MemoryStoreError(f"fact #{fact_id} is already active")
                    await set_status(
                        db,
                        batch,
                        "undo",
                        found[fact_id],
                        "active",
                        None,
                        f"restored by undo (was {found[fact_id].status}: {found[fact_id].why})",
                    )
                    touched = [fact_id]
                else:
                    touched = await undo_batch(db, batch, self.scope)
            facts = await self._facts_by_id(touched)
            return [facts[i] for i in touched]

    async def import_facts(self, facts: Sequence[Fact]) -> int:
        """Add the active facts of an export to this scope, skipping ones already known."""
        known = {normalize_text(f.text) for f in await self.list_facts(op="import")}
        texts: list[str] = []
        for fact in facts:
            key = normalize_text(fact.text)
            if fact.active and key not in known:
                known.add(key)
                texts.append(fact.text)
        if not texts:
            return 0
        result = await self.apply(
            adds=texts, provenance=Provenance(source="import", task="import"), op="import"
        )
        return len(result.added)

    async def reembed(self, embedder: Embedder, *, batch_size: int = 64) -> int:
        """Re-embed every fact with ``embedder`` and pin the store to it. No timeout."""
        async with self._op("reembed", timeout=None):
            rows = await self._fetch("SELECT id, text FROM facts ORDER BY id")
            vectors: list[tuple[int, list[float]]] = []
            for start in range(0, len(rows), batch_size):
                chunk = rows[start : start + batch_size]
                embedded = await embedder.embed([str(r[1]) for r in chunk])
                vectors.extend((int(r[0]), v) for r, v in zip(chunk, embedded, strict=True))
            async with self._write() as db:
                await db.execute("DELETE FROM vectors")
                await db.execute("DELETE FROM meta WHERE key IN ('embed_model', 'embed_dim')")
                if vectors:
                    await pin(db, embedder.model, len(vectors[0][1]))
                await db.executemany(
                    "INSERT INTO vectors (fact_id, model, dim, vec) VALUES (?, ?, ?, ?)",
                    [(i, embedder.model, len(v), pack(v)) for i, v in vectors],
                )
        if self.embedder is not None and self.embedder is not embedder:
            await self.embedder.aclose()
        self.embedder = embedder
        return len(vectors)

    async def _active_among(self, ids: Sequence[int]) -> set[int]:
        facts = await self._facts_by_id(list(set(ids)))
        return {i for i, f in facts.items() if f.active and f.scope == self.scope}

    async def _retire(
        self,
        db: aiosqlite.Connection,
        batch: str,
        fact_id: int,
        status: str,
        why: str,
        prov: Provenance,
        *,
        superseded_by: int | None = None,
    ) -> None:
        fact = (await self._facts_by_id([fact_id]))[fact_id]
        op = "forget" if status == "forgotten" else prov.source
        await set_status(db, batch, op, fact, status, superseded_by, why, prov.run_id)
