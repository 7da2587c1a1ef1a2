"""The incremental vector index: in-place updates, and the store keeping it in step with the
file (own writes, other connections' writes, forget, supersede, undo, reembed) without a full
reload."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from driveros.memory import MemoryStore, Provenance, _vindex
from driveros.memory._vindex import VectorIndex
from tests.memory._embedserver import EmbeddingServer
from tests.memory.conftest import embedder

PROV = Provenance(run_id="r", model="m", task="t")


def _rows(vectors: np.ndarray, first_id: int = 1) -> list[tuple[int, bytes]]:
    return [(first_id + i, v.astype("f4").tobytes()) for i, v in enumerate(vectors)]


def test_vector_index_upsert_replace_remove_and_compact() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((300, 32)).astype("f4")
    index = VectorIndex("m", 32)
    index.upsert(_rows(vectors))
    assert len(index) == 300 and index.top(vectors[41].tolist(), 1) == [42]
    # Replacing a vector in place: the old direction no longer finds it, the new one does.
    index.upsert([(42, vectors[200].tobytes())])
    assert index.top(vectors[41].tolist(), 3)[0] != 42
    assert set(index.top(vectors[200].tolist(), 2)) == {42, 201}
    # Removed rows never come back from a query, even when asked for more than remain.
    index.remove(range(1, 101))
    assert len(index) == 200 and 5 not in index
    assert not set(index.top(vectors[4].tolist(), 500)) & set(range(1, 101))
    assert len(index.top(vectors[4].tolist(), 500)) == 200
    # Past a quarter of dead rows the arrays are compacted; ids and answers stay the same.
    index.remove(range(101, 151))
    assert index.ids() == list(range(151, 301))
    assert index.top(vectors[250].tolist(), 1) == [251]
    # A restored fact is appended again; a blob of another size removes instead of adding.
    index.upsert([(5, vectors[4].tobytes()), (260, b"\0" * 8)])
    assert index.top(vectors[4].tolist(), 1) == [5] and 260 not in index


def test_vector_index_bit_pass_finds_near_vectors_and_skips_removed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_vindex, "EXACT_LIMIT", 50)
    monkeypatch.setattr(_vindex, "OVERSAMPLE", 4)
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((500, 96)).astype("f4")
    index = VectorIndex("m", 96)
    index.upsert(_rows(vectors, 1000))
    for j in (0, 123, 499):
        assert index.top(vectors[j].tolist(), 5)[0] == j + 1000
    index.remove([1123])
    approximate = index.top(vectors[123].tolist(), 5)
    assert 1123 not in approximate and len(approximate) == 5
    assert 1123 not in index.top(vectors[123].tolist(), 5, exact=True)
    # The exact path scores every live row: its best match is the true nearest neighbour.
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    scores = unit @ (vectors[7] / np.linalg.norm(vectors[7]))
    scores[123] = -np.inf
    assert index.top(vectors[7].tolist(), 3, exact=True) == [
        int(i) + 1000 for i in np.argsort(-scores)[:3]
    ]


def test_vector_index_candidate_select_keeps_exactly_the_nearest_rows() -> None:
    rng = np.random.default_rng(11)
    for _ in range(200):
        distance = rng.integers(0, 24, size=int(rng.integers(2, 400))).astype(np.uint16)
        wanted = int(rng.integers(1, len(distance)))
        rows = _vindex._nearest(distance, wanted)
        assert len(rows) == wanted and bool(np.all(np.diff(rows) > 0))
        assert sorted(distance[rows].tolist()) == sorted(distance.tolist())[:wanted]


def _truth(path: Path, scope: str) -> list[int]:
    con = sqlite3.connect(path)
    try:
        rows = con.execute(
            "SELECT v.fact_id FROM vectors v JOIN facts f ON f.id = v.fact_id "
            "WHERE f.scope = ? AND f.status = 'active' ORDER BY v.fact_id",
            (scope,),
        ).fetchall()
    finally:
        con.close()
    return [int(r[0]) for r in rows]


async def test_store_vector_index_follows_writes_without_reloading(
    tmp_path: Path, embed_server: EmbeddingServer
) -> None:
    path = tmp_path / "mem.db"
    async with await MemoryStore.open(path, scope="s", embedder=embedder(embed_server)) as s:
        first = await s.apply(
            adds=["the service keeps rows in sqlite", "tests run with pytest"], provenance=PROV
        )
        await s.search("database", 3)
        index = s._reader.index
        assert index is not None and index.ids() == _truth(path, "s")
        seq = index.seq

        # Own add: picked up in place, the index object is the same one.
        added = await s.apply(adds=["the cache lives in postgres"], provenance=PROV)
        hits = await s.search("which database", 5)
        assert s._reader.index is index and index.seq > seq
        assert added.added[0] in index and added.added[0] in [h.id for h in hits]

        # Forget, then undo: out and back in.
        await s.forget(added.added[0])
        assert added.added[0] not in [h.id for h in await s.search("database", 8)]
        assert added.added[0] not in index
        await s.undo(added.added[0])
        assert added.added[0] in [h.id for h in await s.search("database", 8)]
        assert added.added[0] in index

        # Supersede: the old fact leaves the index, its replacement enters.
        old = first.added[0]
        upd = await s.apply(updates=[(old, "the service keeps rows in postgres")], provenance=PROV)
        [(_, new)] = upd.updated
        hits = await s.search("database storage", 8)
        assert old not in index and new in index and old not in [h.id for h in hits]

        # Undo of the supersede batch: the old fact is back, the replacement retired.
        await s.undo()
        hits = await s.search("database storage", 8)
        assert old in index and new not in index and new not in [h.id for h in hits]
        assert s._reader.index is index and index.ids() == _truth(path, "s")


async def test_store_vector_index_sees_other_connections_writes(
    tmp_path: Path, embed_server: EmbeddingServer
) -> None:
    path = tmp_path / "mem.db"
    reader = await MemoryStore.open(path, scope="s", embedder=embedder(embed_server))
    writer = await MemoryStore.open(path, scope="s", embedder=embedder(embed_server))
    other = await MemoryStore.open(path, scope="t", embedder=embedder(embed_server))
    try:
        await writer.apply(adds=["builds use make"], provenance=PROV)
        await reader.search("make", 3)
        index = reader._reader.index
        assert index is not None
        res = await writer.apply(adds=["data sits in sqlite", "lint with ruff"], provenance=PROV)
        await other.apply(adds=["another repository uses postgres"], provenance=PROV)
        await writer.forget(res.added[1])
        hits = await reader.search("database", 3)
        assert reader._reader.index is index
        assert index.ids() == _truth(path, "s")
        assert hits[0].text == "data sits in sqlite"
        assert all(h.scope == "s" for h in hits)
    finally:
        for s in (reader, writer, other):
            await s.aclose()


async def test_store_vector_index_rebuilds_for_a_new_model(
    tmp_path: Path, embed_server: EmbeddingServer
) -> None:
    path = tmp_path / "mem.db"
    async with await MemoryStore.open(path, scope="s", embedder=embedder(embed_server)) as s:
        await s.apply(adds=["uses sqlite", "uses make"], provenance=PROV)
        await s.search("database", 2)
        before = s._reader.index
        await s.reembed(embedder(embed_server, "embed-b"))
        assert [h.text for h in await s.search("database", 1)] == ["uses sqlite"]
        after = s._reader.index
        assert after is not before and after is not None and after.model == "ollama:embed-b"
        assert after.ids() == _truth(path, "s")


async def test_store_upgrades_a_version_1_file_and_indexes_it(
    tmp_path: Path, embed_server: EmbeddingServer
) -> None:
    from driveros.memory._db import _statements
    from driveros.memory._schema import MIGRATIONS

    path = tmp_path / "old.db"
    con = sqlite3.connect(path, isolation_level=None)
    for statement in _statements(MIGRATIONS[0]):
        con.execute(statement)
    con.execute("PRAGMA user_version = 1")
    con.close()
    async with await MemoryStore.open(path, scope="s", embedder=embedder(embed_server)) as s:
        await s.apply(adds=["keeps rows in sqlite"], provenance=PROV)
        assert [h.text for h in await s.search("database", 1)] == ["keeps rows in sqlite"]
        await s.apply(adds=["the package import is lazy"], provenance=PROV)
        assert [h.text for h in await s.search("module", 1)] == ["the package import is lazy"]
