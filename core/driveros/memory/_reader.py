"""The read side of recall: a second SQLite connection used from a worker thread, so one
recall is one or two thread hops instead of one hop per statement, and the in-process vector
index it keeps current from ``index_log`` (only rows changed since its high-water mark)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from driveros.memory._db import BUSY_MS
from driveros.memory._models import Fact
from driveros.memory._rows import FACT_COLUMNS, fact_from_row
from driveros.memory._search import fts_query, fuse, select_words
from driveros.memory._vindex import VectorIndex

#: Rows in the log since the last refresh beyond which a full load is cheaper than a delta.
_RELOAD_SHARE = 0.5
#: Most words remembered as over the posting budget (the cache is dropped when full).
_COMMON_WORDS = 4096
#: A common word is counted this far past the budget, so that its count stays provably over
#: the budget across this many later changes to the index without being counted again.
_COUNT_MARGIN = 256
_COUNT = "SELECT count(*) FROM (SELECT 1 FROM facts_fts WHERE facts_fts MATCH ? LIMIT ?)"
_STATE = (
    "SELECT (SELECT value FROM meta WHERE key = 'gen'), "
    "(SELECT value FROM meta WHERE key = 'embed_model'), "
    "(SELECT value FROM meta WHERE key = 'embed_dim'), "
    "(SELECT coalesce(max(seq), 0) FROM index_log)"
)
_VECTORS = (
    "SELECT v.fact_id, v.vec FROM vectors v JOIN facts f ON f.id = v.fact_id "
    "WHERE f.scope = ? AND f.status = 'active' AND v.model = ?"
)
_CHANGED_VECTORS = (
    _VECTORS + " AND v.fact_id IN (SELECT fact_id FROM index_log WHERE seq > ? AND seq <= ?)"  # noqa: S608 (constants only)
)


@dataclass
class FirstPass:
    """What one hop learned: the pinned model, the lexical ranking, and either the final
    facts (no vector ranking to add) or ``None`` (embed the query, then :meth:`finish`)."""

    pinned: str | None
    lexical: list[int]
    facts: list[Fact] | None


class Reader:
    """Recall queries on their own connection; every method runs under ``lock`` and is
    meant to be called through ``asyncio.to_thread``."""

    def __init__(self, conn: sqlite3.Connection, scope: str) -> None:
        self._conn = conn
        self.scope = scope
        self.lock = threading.Lock()
        self.index: VectorIndex | None = None
        #: The pinned model seen by the last recall: when it is the caller's, the caller
        #: embeds the query first and the whole recall is one hop.
        self.pinned_seen: str | None = None
        self._single_scope_at: tuple[int, bool] | None = None
        #: Words counted over the posting budget: word -> (count, gen when counted).
        self._common: dict[str, tuple[int, int]] = {}

    @classmethod
    def open(cls, path: Path, scope: str) -> Reader:
        conn = sqlite3.connect(
            str(path), isolation_level=None, check_same_thread=False, timeout=BUSY_MS / 1000
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        except BaseException:
            conn.close()
            raise
        return cls(conn, scope)

    def close(self) -> None:
        with self.lock:
            self._conn.close()

    # ------------------------------------------------------------------ recall

    def first(
        self,
        words: Sequence[str],
        wide: int,
        limit: int,
        model: str | None,
        budget: int,
        query: Sequence[float] | None = None,
    ) -> FirstPass:
        """Lexical ranking; with ``model`` (when it is the pinned one) the vector index is
        brought up to date and fused in when ``query`` (its embedding) is given, otherwise
        the caller embeds and continues with :meth:`finish`."""
        with self.lock:
            [(gen, pinned, dim, seq)] = self._conn.execute(_STATE).fetchall()
            pinned = None if pinned is None else str(pinned)
            self.pinned_seen = pinned
            lexical = self._lexical(words, wide, budget, int(gen or 0)) if words else []
            rankings = [lexical] if words else []
            if model is not None and pinned == model:
                index = self._refresh(model, int(dim or 0), int(seq))
                if len(index) and query is None:
                    return FirstPass(pinned, lexical, None)
                if len(index) and query is not None:
                    rankings.append(index.top(query, wide))
            return FirstPass(pinned, lexical, self._facts(fuse(rankings, limit)))

    def finish(
        self, lexical: list[int] | None, query: Sequence[float], wide: int, limit: int
    ) -> list[Fact]:
        """Fuse the vector ranking of ``query`` with ``lexical`` and load the facts."""
        with self.lock:
            rankings = [] if lexical is None else [lexical]
            if self.index is not None:
                rankings.append(self.index.top(query, wide))
            return self._facts(fuse(rankings, limit))

    def _facts(self, ids: list[int]) -> list[Fact]:
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self._conn.execute(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE id IN ({marks})",  # noqa: S608
            ids,
        ).fetchall()
        found = {int(r[0]): fact_from_row(r) for r in rows}
        return [found[i] for i in ids if i in found]

    # ------------------------------------------------------------------ lexical

    def _lexical(self, words: Sequence[str], wide: int, budget: int, gen: int) -> list[int]:
        """BM25 over the rarer query words; when even the rarest word is over ``budget``,
        every word is ranked over the newest ``budget`` facts (see ``POSTING_BUDGET``).

        Counting stops at ``budget + 1`` rows per word, so a common word costs no more than
        the budget to count."""
        costs = [(w, self._count(w, budget, gen)) for w in words]
        chosen = select_words(costs, budget)
        newest = 0
        if not chosen:
            chosen = [w for w, cost in costs if cost > 0]
            floor = self._conn.execute(
                "SELECT id FROM facts WHERE scope = ? AND status = 'active' "
                "ORDER BY id DESC LIMIT 1 OFFSET ?",
                (self.scope, budget),
            ).fetchall()
            newest = int(floor[0][0]) if floor else 0
        match = fts_query(chosen)
        if match is None:
            return []
        if self._single_scope(gen):
            # Only active facts are indexed, and all are ours: no join needed.
            sql = (
                "SELECT rowid FROM facts_fts WHERE facts_fts MATCH ? AND rowid > ? "
                "ORDER BY bm25(facts_fts) LIMIT ?"
            )
            params: tuple[object, ...] = (match, newest, wide)
        else:
            sql = (
                "SELECT f.id FROM facts_fts JOIN facts f ON f.id = facts_fts.rowid "
                "WHERE facts_fts MATCH ? AND facts_fts.rowid > ? AND f.scope = ? "
                "AND f.status = 'active' ORDER BY bm25(facts_fts) LIMIT ?"
            )
            params = (match, newest, self.scope, wide)
        return [int(r[0]) for r in self._conn.execute(sql, params).fetchall()]

    def _count(self, word: str, budget: int, gen: int) -> int:
        """How many indexed facts contain ``word``, capped at ``budget + 1``.

        A word once counted over the budget is not counted again while it must still be
        over: every change to the index bumps ``gen`` at least once, so ``gen`` moving by d
        changes any count by at most d. The answer is the same as a fresh count's."""
        seen = self._common.get(word)
        if seen is not None and seen[0] - abs(gen - seen[1]) > budget:
            return budget + 1
        cap = budget + 1 + _COUNT_MARGIN
        count = int(self._conn.execute(_COUNT, (f'"{word}"', cap)).fetchone()[0])
        if count > budget:
            if len(self._common) >= _COMMON_WORDS:
                self._common.clear()
            self._common[word] = (count, gen)
        return min(count, budget + 1)

    def _single_scope(self, gen: int) -> bool:
        """True when every fact in the file belongs to this scope (the usual case)."""
        if self._single_scope_at is None or self._single_scope_at[0] != gen:
            [[other]] = self._conn.execute(
                "SELECT EXISTS (SELECT 1 FROM facts WHERE scope < ?1) "
                "OR EXISTS (SELECT 1 FROM facts WHERE scope > ?1)",
                (self.scope,),
            ).fetchall()
            self._single_scope_at = (gen, not other)
        return self._single_scope_at[1]

    # ------------------------------------------------------------------ vectors

    def _refresh(self, model: str, dim: int, seq: int) -> VectorIndex:
        """The index of ``model`` as of log position ``seq`` (read before the rows, so a
        change committed in between is applied again next time: applying is idempotent)."""
        index = self.index
        if index is not None and index.model == model and index.seq == seq:
            return index
        if (
            index is None
            or index.model != model
            or (dim and index.dim != dim)
            or seq - index.seq > max(1000, _RELOAD_SHARE * len(index))
        ):
            return self._load(model, dim, seq)
        changed = [
            int(r[0])
            for r in self._conn.execute(
                "SELECT DISTINCT fact_id FROM index_log WHERE seq > ? AND seq <= ?",
                (index.seq, seq),
            )
        ]
        rows = [
            (int(r[0]), bytes(r[1]))
            for r in self._conn.execute(
                _CHANGED_VECTORS,
                (self.scope, model, index.seq, seq),
            )
        ]
        present = {fact_id for fact_id, _ in rows}
        index.remove(i for i in changed if i not in present)
        index.upsert(rows)
        index.seq = seq
        return index

    def _load(self, model: str, dim: int, seq: int) -> VectorIndex:
        rows = [(int(r[0]), bytes(r[1])) for r in self._conn.execute(_VECTORS, (self.scope, model))]
        if not dim:
            dim = len(rows[0][1]) // 4 if rows else 0
        self.index = VectorIndex(model, dim, seq)
        self.index.upsert(rows)
        return self.index
