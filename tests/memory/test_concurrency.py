"""Several writers at once lose nothing; a writer killed with SIGKILL leaves a sound database."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from driveros.memory import MemoryStore, Provenance

REPO = Path(__file__).resolve().parents[2]


def writer(db: Path, prefix: str, batches: int, size: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.memory._writer", str(db), prefix, str(batches), str(size)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def check_sound(db: Path) -> int:
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        con.execute("INSERT INTO facts_fts(facts_fts) VALUES ('integrity-check')")
        [[count]] = con.execute("SELECT count(*) FROM facts").fetchall()
        [[indexed]] = con.execute(
            "SELECT count(*) FROM facts_fts WHERE facts_fts MATCH 'build'"
        ).fetchall()
        assert indexed == count
        return int(count)
    finally:
        con.close()


async def test_concurrent_writer_processes_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    async with await MemoryStore.open(db, scope="shared"):
        pass
    procs = [writer(db, f"w{i}", 25, 4) for i in range(4)]
    for p in procs:
        out, err = await asyncio.to_thread(p.communicate)
        assert p.returncode == 0, err
        assert out.splitlines()[-1] == "committed 25"
    assert check_sound(db) == 4 * 25 * 4
    async with await MemoryStore.open(db, scope="shared") as store:
        texts = {f.text for f in await store.list_facts()}
    assert len(texts) == 400
    assert "w3 batch 24 fact 3 about the build" in texts


async def test_concurrent_tasks_on_one_store_lose_nothing(tmp_path: Path) -> None:
    async with await MemoryStore.open(tmp_path / "mem.db", scope="s") as store:

        async def one(i: int) -> None:
            await store.apply(adds=[f"task {i} fact"], provenance=Provenance(run_id=str(i)))
            await store.search(f"task {i}", 3)

        await asyncio.gather(*(one(i) for i in range(30)))
        assert len(await store.list_facts()) == 30


async def test_writer_killed_mid_store_leaves_old_or_new_state(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    size = 400
    rng = random.Random(7)
    committed_before = 0
    for _ in range(4):
        proc = writer(db, f"k{committed_before}", 1000, size)
        assert proc.stdout is not None
        # Let it commit at least once, then kill it at an arbitrary moment of a later batch.
        line = await asyncio.to_thread(proc.stdout.readline)
        assert line.startswith("committed"), proc.stderr.read() if proc.stderr else ""
        await asyncio.sleep(rng.uniform(0.0, 0.2))
        proc.send_signal(signal.SIGKILL)
        rest, _ = await asyncio.to_thread(proc.communicate)
        assert proc.returncode == -signal.SIGKILL
        seen = 1 + rest.count("committed")
        count = check_sound(db)
        # Whole batches only; the kill may land after a COMMIT but before its "committed" line.
        assert count % size == 0
        batches = count // size - committed_before
        assert batches in (seen, seen + 1)
        committed_before = count // size
    async with await MemoryStore.open(db, scope="shared") as store:
        await store.apply(adds=["after the crashes"], provenance=Provenance())
        assert [f.text for f in await store.search("after the crashes", 1)] == ["after the crashes"]
