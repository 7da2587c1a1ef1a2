"""The health of the memory database: the open-time check, salvage and page carving on
real SQLite files, and hostile bytes that must never crash the doctor."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driveros import MemoryDamagedError
from driveros.memory import MemoryStore, Provenance, check_integrity, salvage_facts
from driveros.memory._carve import carve_facts

TEXTS = [f"fact {i} " + "é漢 overflow " * (i * 90) for i in range(12)]


async def _seed(db: Path) -> list[int]:
    async with await MemoryStore.open(db, scope="s") as store:
        added = (await store.apply(adds=TEXTS, provenance=Provenance(run_id="r"))).added
        await store.forget(added[0], why="wrong")
        await store.apply(adds=["elsewhere"], provenance=Provenance())
    async with await MemoryStore.open(db, scope="other") as store:
        await store.apply(adds=["another repository's fact"], provenance=Provenance())
    return added


class Sound:
    """A sound database's bytes (a class, so a failing example does not print them all)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __repr__(self) -> str:
        return f"Sound({len(self.data)} bytes)"


@pytest.fixture(scope="module")
def sound(tmp_path_factory: pytest.TempPathFactory) -> Sound:
    db = tmp_path_factory.mktemp("sound") / "mem.db"
    asyncio.run(_seed(db))
    return Sound(db.read_bytes())


def test_health_carving_a_sound_file_finds_every_row_as_sql_does(
    sound: Sound, tmp_path: Path
) -> None:
    db = tmp_path / "mem.db"
    db.write_bytes(sound.data)
    carved = carve_facts(db)

    async def listed() -> list[object]:
        async with await MemoryStore.open(db, scope="s") as store:
            return list(reversed(await store.list_facts(status="all", all_scopes=True)))

    # Overflow pages, UTF-8, statuses and provenance all come back as SQLite reads them.
    assert carved == asyncio.run(listed())
    assert carved[0].status == "forgotten" and carved[0].why == "wrong"


async def test_health_salvage_keeps_one_scope_and_never_writes(
    sound: Sound, tmp_path: Path
) -> None:
    db = tmp_path / "mem.db"
    db.write_bytes(sound.data)
    found = await salvage_facts(db, scope="other")
    assert [f.text for f in found.facts] == ["another repository's fact"]
    assert not found.gaps and found.complete
    assert db.read_bytes() == sound.data
    assert await check_integrity(db) == []


async def test_health_header_garbage_is_damage(sound: Sound, tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    db.write_bytes(b"not a database at all" + sound.data[21:])
    with pytest.raises(MemoryDamagedError):
        await MemoryStore.open(db, scope="s")
    assert await check_integrity(db) != []
    # The pages past the header still hold the rows.
    assert len((await salvage_facts(db, scope=None)).facts) == len(TEXTS) + 2


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    at=st.floats(min_value=0, max_value=1),
    garbage=st.binary(min_size=1, max_size=9000),
)
def test_health_any_damage_never_crashes_and_never_writes(
    sound: Sound, tmp_path_factory: pytest.TempPathFactory, at: float, garbage: bytes
) -> None:
    db = tmp_path_factory.mktemp("fuzz") / "mem.db"
    offset = int(at * (len(sound.data) - 1))
    data = (sound.data[:offset] + garbage + sound.data[offset + len(garbage) :])[: len(sound.data)]
    db.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    problems = asyncio.run(check_integrity(db))
    found = asyncio.run(salvage_facts(db, scope=None))
    assert all(isinstance(p, str) for p in problems)
    assert len({f.id for f in found.facts}) == len(found.facts)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=0, max_size=20000))
def test_health_carving_random_bytes_never_crashes(data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "junk.db"
        path.write_bytes(data)
        assert isinstance(carve_facts(path), list)


async def test_health_a_store_found_damaged_refuses_every_write(
    sound: Sound, tmp_path: Path
) -> None:
    db = tmp_path / "mem.db"
    db.write_bytes(sound.data)
    async with await MemoryStore.open(db, scope="s") as store:
        store.damaged = True  # what the first "malformed" answer from SQLite sets
        before = await store.list_facts(status="all")
        for write in (
            store.apply(adds=["new"], provenance=Provenance()),
            store.forget(before[0].id),
            store.undo(),
        ):
            with pytest.raises(MemoryDamagedError, match="driveros memory doctor"):
                await write
        assert await store.list_facts(status="all") == before
