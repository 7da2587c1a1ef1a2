"""MemoryStore on real SQLite files: schema, recall, scope, history, undo, limits."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from driveros import MemoryDamagedError, MemoryStoreError
from driveros.memory import SCHEMA_VERSION, MemoryStore, Provenance

PROV = Provenance(run_id="run-1", model="m", task="t")


async def test_store_open_creates_wal_database_at_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "mem.db"
    async with await MemoryStore.open(path, scope="s"):
        pass
    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        con.close()


async def test_store_open_refuses_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "mem.db"
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(MemoryStoreError, match="newer than this driveros"):
        await MemoryStore.open(path, scope="s")


async def test_search_ranks_by_bm25_with_stemming(store: MemoryStore) -> None:
    await store.apply(
        adds=[
            "go.mod declares the module path example.com/demo",
            "The tests run with go test ./...",
            "README mentions a module for logging",
        ],
        provenance=PROV,
    )
    hits = await store.search("What module path does this project declare?", 2)
    assert [h.text for h in hits] == [
        "go.mod declares the module path example.com/demo",
        "README mentions a module for logging",
    ]
    assert hits[0].run_id == "run-1" and hits[0].model == "m" and hits[0].task == "t"
    assert await store.search("the of what", 5) == []


async def test_search_only_sees_its_own_scope(tmp_path: Path) -> None:
    path = tmp_path / "mem.db"
    async with await MemoryStore.open(path, scope="repo-a") as a:
        await a.apply(adds=["repo a uses pytest"], provenance=PROV)
    async with await MemoryStore.open(path, scope="repo-b") as b:
        await b.apply(adds=["repo b uses unittest"], provenance=PROV)
        assert [f.text for f in await b.search("which test runner uses", 5)] == [
            "repo b uses unittest"
        ]
        assert len(await b.list_facts(all_scopes=True)) == 2


async def test_forget_keeps_the_row_and_undo_restores_it(store: MemoryStore) -> None:
    [fid] = (await store.apply(adds=["build with make"], provenance=PROV)).added
    forgotten = await store.forget(fid)
    assert forgotten.status == "forgotten" and forgotten.why == "forgotten by user"
    assert await store.search("build make", 5) == []
    with pytest.raises(MemoryStoreError, match="already forgotten"):
        await store.forget(fid)
    [restored] = await store.undo(fid)
    assert restored.active and restored.why.startswith("restored by undo")
    assert [f.id for f in await store.search("build make", 5)] == [fid]
    with pytest.raises(MemoryStoreError, match="no fact #999"):
        await store.forget(999)


async def test_update_supersedes_and_undo_reverts_the_whole_batch(store: MemoryStore) -> None:
    [old] = (await store.apply(adds=["module path is example.com/demo"], provenance=PROV)).added
    res = await store.apply(
        updates=[(old, "module path is example.com/renamed")],
        provenance=Provenance(run_id="run-2", model="m", task="t2"),
    )
    [(replaced, new)] = res.updated
    assert replaced == old
    old_fact = await store.get(old)
    assert old_fact.status == "superseded" and old_fact.superseded_by == new
    assert "run-2" in old_fact.why
    assert [f.id for f in await store.search("module path", 5)] == [new]

    reverted = await store.undo()
    assert {f.id: f.status for f in reverted} == {old: "active", new: "forgotten"}
    assert (await store.get(old)).superseded_by is None
    assert [f.id for f in await store.search("module path", 5)] == [old]
    # The undo itself is not undone by the next bare undo; the earlier batch is.
    [again] = await store.undo()
    assert again.id == old and again.status == "forgotten"
    with pytest.raises(MemoryStoreError, match="nothing to undo"):
        await store.undo()


async def test_update_of_a_fact_retired_meanwhile_becomes_an_add(store: MemoryStore) -> None:
    [old] = (await store.apply(adds=["uses tabs"], provenance=PROV)).added
    await store.forget(old)
    res = await store.apply(
        updates=[(old, "uses spaces")], retires=[(old, "stale")], provenance=PROV
    )
    assert res.updated == [] and res.retired == [] and len(res.added) == 1
    assert (await store.get(old)).status == "forgotten"


async def test_import_skips_known_and_inactive_facts(tmp_path: Path, store: MemoryStore) -> None:
    await store.apply(adds=["ci runs on github actions"], provenance=PROV)
    async with await MemoryStore.open(tmp_path / "other.db", scope="x") as other:
        res = await other.apply(
            adds=["CI runs on GitHub Actions.", "lint with ruff"], provenance=PROV
        )
        await other.forget(res.added[1])
        exported = await other.list_facts(status="all")
    assert await store.import_facts(exported) == 0
    assert [f.text for f in await store.list_facts()] == ["ci runs on github actions"]


async def test_stats_counts_by_status(store: MemoryStore) -> None:
    res = await store.apply(adds=["a fact", "b fact", "c fact"], provenance=PROV)
    await store.forget(res.added[0])
    await store.apply(updates=[(res.added[1], "b fact v2")], provenance=PROV)
    stats = await store.stats()
    assert (stats.active, stats.superseded, stats.forgotten) == (2, 1, 1)
    assert stats.scope == "test:scope" and stats.schema_version == SCHEMA_VERSION
    assert stats.embed_model is None and stats.size_bytes > 0


async def test_write_times_out_when_another_process_holds_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "mem.db"
    async with await MemoryStore.open(path, scope="s", timeout=0.5) as s:
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(MemoryStoreError, match="timed out") as info:
                await s.apply(adds=["blocked"], provenance=PROV)
            assert info.value.context["op"] == "store"
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        # The store is still usable and nothing half-written remains.
        assert await s.list_facts() == []
        await s.apply(adds=["unblocked"], provenance=PROV)
        assert [f.text for f in await s.list_facts()] == ["unblocked"]


async def test_search_keeps_rare_words_and_drops_common_ones(store: MemoryStore) -> None:
    store.posting_budget = 3
    await store.apply(
        adds=[f"service {i} listens on a port" for i in range(5)] + ["service zeta uses redis"],
        provenance=PROV,
    )
    # "service" is in every fact; "redis" in one: only the rare word decides.
    hits = await store.search("which service uses redis", 3)
    assert [h.text for h in hits] == ["service zeta uses redis"]
    # Only common words: BM25 ranks all of them over the newest facts (the budget's worth).
    hits = await store.search("service port", 10)
    assert [h.text for h in hits[:2]] in (
        ["service 3 listens on a port", "service 4 listens on a port"],
        ["service 4 listens on a port", "service 3 listens on a port"],
    )
    assert [h.text for h in hits[2:]] == ["service zeta uses redis"]


async def test_search_word_counts_remembered_across_writes_match_fresh_counts(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mem.db"
    async with await MemoryStore.open(path, scope="s") as s:
        s.posting_budget = 3
        added = await s.apply(
            adds=[f"service {i} listens on a port" for i in range(5)] + ["service zeta uses redis"],
            provenance=PROV,
        )
        # "service" is counted once as common and remembered; "zeta" decides.
        assert [h.text for h in await s.search("service zeta", 3)] == ["service zeta uses redis"]
        # Retiring most facts brings "service" under the budget: it must be counted again
        # and now take part, exactly as in a store that never saw it.
        for fact_id in added.added[:4]:
            await s.forget(fact_id)
        remembered = [h.id for h in await s.search("service zeta", 3)]
        async with await MemoryStore.open(path, scope="s") as fresh:
            fresh.posting_budget = 3
            assert remembered == [h.id for h in await fresh.search("service zeta", 3)]
        assert len(remembered) == 2 and remembered[0] == added.added[5]


async def test_store_open_concurrently_migrates_once(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    stores = await asyncio.gather(*(MemoryStore.open(path, scope=f"s{i}") for i in range(4)))
    try:
        for s in stores:
            await s.apply(adds=[f"fact from {s.scope}"], provenance=PROV)
        assert len(await stores[0].list_facts(all_scopes=True)) == 4
    finally:
        for s in stores:
            await s.aclose()
    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        con.close()


def test_memory_public_names_are_sorted_and_importable() -> None:
    import driveros.memory as memory

    assert list(memory.__all__) == sorted(memory.__all__, key=lambda n: (not n.isupper(), n))
    for name in memory.__all__:
        assert hasattr(memory, name), name


async def test_store_open_on_a_file_that_is_not_a_database_is_a_memory_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mem.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(MemoryStoreError, match="is damaged: run `driveros memory doctor`") as info:
        await MemoryStore.open(path, scope="s")
    assert isinstance(info.value, MemoryDamagedError)
    assert info.value.context["path"] == str(path)
    assert path.read_bytes() == b"this is not sqlite" * 100
