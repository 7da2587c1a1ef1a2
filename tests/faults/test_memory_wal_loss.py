"""Issue 28 row 5: the ``-wal`` and ``-shm`` files deleted while a process has the store open.

Real processes: a holder (``tests.memory._holder``) keeps the store open and writes when
told; the files are deleted under it; then driveros (the CLI, in-process), or a program that
is not driveros, opens the same database. Before, whichever closed last checkpointed its own
log and deleted the other's, and that process's commits were gone, silently. Now nothing is
lost silently: a new opener refuses while the holder lives, doctor names the holder, the
holder refuses to write, and its close never deletes another process's log.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from driveros import MemoryStoreError
from driveros.cli._main import main
from driveros.memory import MemoryStore, Provenance, salvage_facts

Cap = pytest.CaptureFixture[str]
ROOT = Path(__file__).resolve().parents[2]


class Holder:
    def __init__(self, db: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.memory._holder", str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self._line() == "open"

    def _line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def send(self, command: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self._line()

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.send("quit") == "closed"
        self.proc.wait(timeout=30)


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    path = tmp_path / "db" / "mem.db"

    async def seed() -> None:
        async with await MemoryStore.open(path, scope="shared") as store:
            await store.apply(adds=["a0 before it all"], provenance=Provenance(run_id="seed"))

    asyncio.run(seed())
    return path


@pytest.fixture
def holder(db: Path) -> Iterator[Holder]:
    h = Holder(db)
    try:
        yield h
    finally:
        if h.proc.poll() is None:
            h.proc.kill()
            h.proc.wait()


def _delete_logs(db: Path) -> None:
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink()


def _texts(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        return sorted(str(r[0]) for r in conn.execute("SELECT text FROM facts"))
    finally:
        conn.close()


def _files(db: Path) -> list[str]:
    return sorted(p.name for p in db.parent.iterdir())


def test_memory_wal_deleted_then_driveros_opens(
    db: Path, holder: Holder, capsys: Cap, tmp_path: Path
) -> None:
    assert holder.send("write a1 committed by the holder") == "ok"
    _delete_logs(db)
    pid = holder.proc.pid

    code = main(["memory", "doctor", "--format", "json", "--path", str(db)])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and not report["ok"]
    assert f"process {pid} has it open with its" in report["problems"][0]
    assert _files(db) == ["mem.db"]  # the doctor made no second log
    # salvage reads what the file itself holds, making no second log either
    found = asyncio.run(salvage_facts(db, scope="shared"))
    assert [f.text for f in found.facts] == ["a0 before it all"]
    assert _files(db) == ["mem.db"]

    export = tmp_path / "in.json"
    export.write_text(
        json.dumps(
            {
                "facts": [
                    {
                        "id": 1,
                        "scope": "s",
                        "text": "b1 from another process",
                        "created_at": "2026-01-01T00:00:00Z",
                        "updated_at": "2026-01-01T00:00:00Z",
                    }
                ]
            }
        )
    )
    code = main(["memory", "import", str(export), "--path", str(db)])
    _, err = capsys.readouterr()
    assert code == 1 and f"is open in process {pid}, whose" in err and "Traceback" not in err
    assert _files(db) == ["mem.db"]

    reply = holder.send("write a2 after the deletion")
    assert reply.startswith("refused: ") and "were deleted while this process" in reply
    holder.close()
    # The holder's close wrote back everything it had committed: nothing was lost.
    assert _texts(db) == ["a0 before it all", "a1 committed by the holder"]


def test_memory_wal_replaced_by_another_program_is_never_deleted(db: Path, holder: Holder) -> None:
    assert holder.send("write a1 committed by the holder") == "ok"
    _delete_logs(db)
    # A program that is not driveros opens the database anyway: new -wal/-shm files.
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
            'c.execute("INSERT INTO facts (scope, text, created_at, updated_at) '
            "VALUES ('shared', 'b1 from another program', 'x', 'x')\"); c.close()",
            str(db),
        ],
        check=True,
    )
    assert _files(db) == ["mem.db", "mem.db-shm", "mem.db-wal"]
    reply = holder.send("write a2 after the deletion")
    assert reply.startswith("refused: ") and "were replaced while this process" in reply
    holder.close()
    # Before, the holder's close checkpointed its own log and deleted the other's: b1 lost.
    assert "b1 from another program" in _texts(db)
    assert "a2 after the deletion" not in _texts(db)


async def test_memory_wal_deleted_under_a_store_of_this_process(tmp_path: Path) -> None:
    """The language server opens a store per command while a run holds one: /proc cannot tell
    its own connections apart, so the process remembers the stores it has open."""
    db = tmp_path / "mem.db"
    first = await MemoryStore.open(db, scope="shared")
    try:
        await first.apply(adds=["a1 in this process"], provenance=Provenance(run_id="r"))
        _delete_logs(db)
        with pytest.raises(MemoryStoreError, match="were deleted while this process had it"):
            await MemoryStore.open(db, scope="shared")
        assert _files(db) == ["mem.db"]
        with pytest.raises(MemoryStoreError, match="refusing to write"):
            await first.apply(adds=["a2"], provenance=Provenance(run_id="r"))
    finally:
        await first.aclose()
    assert _texts(db) == ["a1 in this process"]
