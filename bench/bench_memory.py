"""Memory recall latency and store throughput, side by side with brute-force baselines.

Recall (p50/p99 over warm queries) at 1k, 10k and 100k facts, lexical (FTS5 BM25) and hybrid
(BM25 + cosine over synthetic 256-d vectors, fused by rank), against baselines in the same run:
a full scan scoring word overlap in Python (lexical) and a per-query load of every vector with
a numpy cosine (hybrid). Store throughput: MemoryStore.apply (history, FTS, change log) against
bare sqlite3 inserts. Target: recall p99 under 20 ms at 100k facts. Ratios, not pass/fail.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import re
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench._results import Row, goal_met, ratio, report
from driveros.memory import MemoryStore, Provenance
from driveros.memory._rows import now_iso
from driveros.memory._search import pack
from driveros.memory._vindex import EXACT_LIMIT, VectorIndex

SIZES = (1_000, 10_000, 100_000)
DIM = 256
QUERIES = 200
BASELINE_QUERIES = {1_000: 200, 10_000: 50, 100_000: 12}
_rng = random.Random(1234)
VOCAB = [
    "".join(_rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(_rng.randint(3, 9)))
    for _ in range(5000)
]
WEIGHTS = [1.0 / (i + 1) for i in range(len(VOCAB))]


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choices(VOCAB, weights=WEIGHTS, k=words))


class SyntheticEmbedder:
    """Deterministic pseudo-random vectors: measures our side of hybrid recall, not a model."""

    model = "synthetic:bench"

    def vector(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        return list(np.random.default_rng(seed).standard_normal(DIM).astype("f4").tolist())

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.vector(t) for t in texts]

    async def aclose(self) -> None:
        return None


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def build(path: Path, n: int) -> None:
    """Schema through MemoryStore, rows through executemany (setup is not what we measure)."""
    async with await MemoryStore.open(path, scope="bench"):
        pass
    rng = random.Random(n)
    emb = SyntheticEmbedder()
    texts = [f"fact {i}: " + sentence(rng, 12) for i in range(n)]
    vectors = await emb.embed(texts)
    at = now_iso()
    con = sqlite3.connect(path)
    with con:
        # Bulk load: index once at the end instead of row by row through the trigger.
        [[trigger]] = con.execute("SELECT sql FROM sqlite_master WHERE name = 'facts_ai'")
        con.execute("DROP TRIGGER facts_ai")
        con.executemany(
            "INSERT INTO facts (id, scope, text, created_at, updated_at) "
            "VALUES (?, 'bench', ?, ?, ?)",
            [(i + 1, t, at, at) for i, t in enumerate(texts)],
        )
        con.executemany(
            "INSERT INTO vectors (fact_id, model, dim, vec) VALUES (?, ?, ?, ?)",
            [(i + 1, emb.model, DIM, pack(v)) for i, v in enumerate(vectors)],
        )
        con.execute(
            "INSERT INTO meta (key, value) VALUES ('embed_model', ?), ('embed_dim', ?)",
            (emb.model, str(DIM)),
        )
        con.execute("INSERT INTO facts_fts (facts_fts) VALUES ('rebuild')")
        con.execute(trigger)
    con.close()


async def time_search(store: MemoryStore, queries: list[str]) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds per recall. CPU time (every thread of this process) does not
    count the time spent waiting for a core, so it shows the cost under any machine load."""
    await store.search(queries[0], 8)  # warm: builds the vector index once
    times, cpu = [], []
    for q in queries:
        t0, c0 = time.perf_counter(), time.process_time()
        await store.search(q, 8)
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return times, cpu


def baseline_lexical(path: Path, queries: list[str]) -> list[float]:
    con = sqlite3.connect(path)
    times = []
    for q in queries:
        t0 = time.perf_counter()
        terms = set(re.findall(r"\w+", q.lower()))
        rows = con.execute(
            "SELECT id, text FROM facts WHERE scope = 'bench' AND status = 'active'"
        ).fetchall()
        scored = [(sum(w in terms for w in text.lower().split()), i) for i, text in rows]
        scored.sort(reverse=True)
        _ = scored[:8]
        times.append((time.perf_counter() - t0) * 1000)
    con.close()
    return times


def baseline_vector(path: Path, queries: list[str]) -> list[float]:
    con = sqlite3.connect(path)
    emb = SyntheticEmbedder()
    times = []
    for q in queries:
        qv = np.asarray(emb.vector(q), "f4")
        t0 = time.perf_counter()
        rows = con.execute(
            "SELECT v.fact_id, v.vec FROM vectors v JOIN facts f ON f.id = v.fact_id "
            "WHERE f.scope = 'bench' AND f.status = 'active'"
        ).fetchall()
        mat = np.vstack([np.frombuffer(r[1], "f4") for r in rows])
        scores = (mat @ qv) / (np.linalg.norm(mat, axis=1) * np.linalg.norm(qv))
        _ = np.argsort(-scores)[:8]
        times.append((time.perf_counter() - t0) * 1000)
    con.close()
    return times


async def store_throughput(tmp: Path) -> tuple[float, float]:
    rng = random.Random(5)
    batches = [[sentence(rng, 12) for _ in range(5)] for _ in range(200)]
    async with await MemoryStore.open(tmp / "tp.db", scope="bench") as store:
        t0 = time.perf_counter()
        for i, batch in enumerate(batches):
            await store.apply(adds=batch, provenance=Provenance(run_id=str(i)))
        ours = 1000 / (time.perf_counter() - t0)
    con = sqlite3.connect(tmp / "raw.db", isolation_level=None)
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA synchronous = NORMAL")
    con.execute("CREATE TABLE facts (id INTEGER PRIMARY KEY, text TEXT)")
    t0 = time.perf_counter()
    for batch in batches:
        con.execute("BEGIN IMMEDIATE")
        con.executemany("INSERT INTO facts (text) VALUES (?)", [(t,) for t in batch])
        con.execute("COMMIT")
    raw = 1000 / (time.perf_counter() - t0)
    con.close()
    return ours, raw


def vector_recall(index: VectorIndex, queries: list[str]) -> float | None:
    """Share of the exact top 8 found by the bit pass, asked for 32 as search() does."""
    if len(index) <= EXACT_LIMIT:
        return None
    emb = SyntheticEmbedder()
    found = 0
    for q in queries[:50]:
        v = emb.vector(q)
        found += len(set(index.top(v, 32)[:8]) & set(index.top(v, 8, exact=True)))
    return found / (8 * min(50, len(queries)))


async def after_write(store: MemoryStore, queries: list[str], rounds: int = 5) -> float:
    """Median latency of the first hybrid query after a one-fact write (incremental load)."""
    times = []
    for i in range(rounds):
        await store.apply(adds=[f"written fact {i}"], provenance=Provenance(run_id="w"))
        t0 = time.perf_counter()
        await store.search(queries[i], 8)
        times.append((time.perf_counter() - t0) * 1000)
    return pct(times, 0.5)


#: What this run measured, reported into bench/RESULTS.md at the end.
ROWS: list[Row] = []


def row(label: str, ours: tuple[list[float], list[float]], base: list[float], n: int) -> str:
    wall, cpu = ours
    p50, p99, b50, b99 = pct(wall, 0.5), pct(wall, 0.99), pct(base, 0.5), pct(base, 0.99)
    goal = "none"
    if n == SIZES[-1]:
        goal = goal_met("p99 < 20 ms", p99 < 20)
    where = " (`make bench ARGS=memory`)" if not ROWS else " (same run)"
    ROWS.append(
        Row(
            benchmark=f"memory recall p99, {n:,} facts, {label}{where}",
            measured=f"{p99:.2f} ms (p50 {p50:.2f} ms)",
            baseline=f"{b99:.2f} ms brute force (p50 {b50:.2f} ms)",
            ratio=ratio(p99, b99, 3),
            goal=goal,
        )
    )
    return (
        f"{label:<22} ours p50 {p50:7.2f} ms  p99 {p99:7.2f} ms "
        f"(cpu p50 {pct(cpu, 0.5):5.2f} p99 {pct(cpu, 0.99):5.2f}) | "
        f"brute force p50 {b50:8.2f} ms  p99 {b99:8.2f} ms | p99 ratio {p99 / b99:6.3f}"
    )


async def run() -> None:
    print(f"load average at the start: {os.getloadavg()[0]:.1f} (1 min), {os.cpu_count()} cores")
    rng = random.Random(99)
    queries = [sentence(rng, 6) for _ in range(QUERIES)]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for n in SIZES:
            path = tmp / f"m{n}.db"
            t0 = time.perf_counter()
            await build(path, n)
            print(f"\n{n:>7} facts (built in {time.perf_counter() - t0:.1f} s)")
            nb = BASELINE_QUERIES[n]
            async with await MemoryStore.open(path, scope="bench") as lexical:
                lex = await time_search(lexical, queries)
            print(row("lexical (FTS5 BM25)", lex, baseline_lexical(path, queries[:nb]), n))
            async with await MemoryStore.open(
                path, scope="bench", embedder=SyntheticEmbedder()
            ) as hybrid:
                t1 = time.perf_counter()
                await hybrid.search(queries[0], 8)
                cold = (time.perf_counter() - t1) * 1000
                ours = await time_search(hybrid, queries)
                index = hybrid._reader.index
                assert index is not None  # built by the searches above
                recall = vector_recall(index, queries)
                written = await after_write(hybrid, queries)
            print(row("hybrid (BM25+cosine)", ours, baseline_vector(path, queries[:nb]), n))
            print(f"{'':<22} first hybrid query (vector index load): {cold:.1f} ms")
            print(f"{'':<22} first hybrid query after a write (incremental): {written:.1f} ms")
            if recall is not None:
                print(f"{'':<22} vector top-8 recall of the bit pass vs exact cosine: {recall:.2f}")
            if n == SIZES[-1]:
                for label, result in (("lexical", lex), ("hybrid", ours)):
                    verdict = "meets" if pct(result[0], 0.99) < 20 else "misses"
                    print(f"target p99 < 20 ms at {n} facts ({label}): {verdict}")
        print(f"load average at the end: {os.getloadavg()[0]:.1f} (1 min)")
        ours_tp, raw_tp = await store_throughput(tmp)
        print(
            f"\nstore throughput: MemoryStore.apply {ours_tp:8.0f} facts/s (5 per transaction) | "
            f"bare sqlite3 {raw_tp:8.0f} facts/s | ratio {ours_tp / raw_tp:.3f}"
        )
    ROWS.append(
        Row(
            benchmark="memory store throughput, `MemoryStore.apply`, 5 facts per transaction "
            "(same run)",
            measured=f"{ours_tp:.0f} facts/s",
            baseline=f"{raw_tp:.0f} facts/s bare sqlite3 inserts",
            ratio=ratio(ours_tp, raw_tp, 3),
        )
    )
    report("memory", ROWS)


def main() -> None:
    asyncio.run(run())


if __name__ == "__main__":
    main()
