"""Row 10 of issue 15: the memory database has garbage in the middle of the file.

The damage is real: a store written by driveros, closed, then overwritten mid-file with bytes
that are no SQLite page, as a bad sector or a half-finished copy leaves it. Every command must
say so and exit 1, nothing may be written to the file, ``driveros memory doctor`` reports it
and salvages what is readable, and an agent run goes on without memory, saying why.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from driveros import DriverosError, MemoryDamagedError, MemoryStoreError
from driveros.cli._main import main
from driveros.memory import (
    MemoryStore,
    Provenance,
    check_integrity,
    default_db_path,
    scope_for,
)
from driveros.testing import ScriptedModelServer, Turn
from tests.memory.conftest import make_repo

Cap = pytest.CaptureFixture[str]
ONE_FACT = {
    "id": 1,
    "scope": "s",
    "text": "a new fact",
    "created_at": "2026-01-01T00:00:00Z",
    "updated_at": "2026-01-01T00:00:00Z",
}
DRIVEROS = Path(sys.executable).parent / "driveros"
FACTS = [
    f"fact {i}: the build of module {i} runs with make target-{i} " + "x" * 200 for i in range(60)
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("DRIVEROS_MEMORY_PATH", "MNEME_EMBED_MODEL", "OLLAMA_HOST", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


async def _seed(db: Path, scope: str) -> None:
    async with await MemoryStore.open(db, scope=scope) as store:
        for start in range(0, len(FACTS), 10):
            await store.apply(adds=FACTS[start : start + 10], provenance=Provenance(run_id="r1"))


def damage(db: Path) -> None:
    """Overwrite two pages in the middle of the file with garbage."""
    size = db.stat().st_size
    with db.open("r+b") as fh:
        fh.seek(size // 2)
        fh.write(b"\xde\xad\xbe\xef" * 2048)


def _digest(db: Path) -> str:
    return hashlib.sha256(db.read_bytes()).hexdigest()


@pytest.fixture
def damaged_repo(tmp_path: Path) -> tuple[Path, Path]:
    repo = make_repo(tmp_path / "repo")
    scope = asyncio.run(scope_for(repo))
    db = default_db_path(scope)
    asyncio.run(_seed(db, scope))
    damage(db)
    assert not Path(f"{db}-wal").exists()  # a clean close checkpointed everything
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        with pytest.raises(sqlite3.DatabaseError, match="malformed"):
            conn.execute("PRAGMA integrity_check").fetchall()
    finally:
        conn.close()
    return repo, db


def cli(capsys: Cap, *args: str) -> tuple[int, str, str]:
    code = main(["memory", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_memory_damage_every_command_exits_1_and_never_writes(
    damaged_repo: tuple[Path, Path], capsys: Cap, tmp_path: Path
) -> None:
    repo, db = damaged_repo
    before = _digest(db)
    export = tmp_path / "export.json"
    export.write_text(json.dumps({"facts": [ONE_FACT]}))
    ws = ("--workspace", str(repo))
    for args in (
        ("list",),
        ("search", "make target"),
        ("show", "1"),
        ("forget", "1"),
        ("undo",),
        ("export",),
        ("import", str(export)),
        ("stats",),
        ("list", "--format", "json"),
    ):
        code, out, err = cli(capsys, *args, *ws)
        message = f"memory database {db} is damaged: run `driveros memory doctor`"
        assert code == 1, (args, out, err)
        assert message in err, args
        if "json" in args:  # stdout carries the error as data
            assert json.loads(out)["error"] == message
        else:
            assert out == "", args
        assert "Traceback" not in err
    assert _digest(db) == before
    wal = Path(f"{db}-wal")
    assert not wal.exists() or wal.stat().st_size == 0


async def test_memory_damage_open_raises_a_typed_error(damaged_repo: tuple[Path, Path]) -> None:
    repo, db = damaged_repo
    before = _digest(db)
    with pytest.raises(MemoryDamagedError) as err:
        await MemoryStore.open(db, scope=await scope_for(repo))
    assert isinstance(err.value, MemoryStoreError) and isinstance(err.value, DriverosError)
    assert str(err.value) == f"memory database {db} is damaged: run `driveros memory doctor`"
    assert err.value.context["problems"]
    assert _digest(db) == before


def test_memory_doctor_reports_damage_and_recovers(
    damaged_repo: tuple[Path, Path], capsys: Cap, tmp_path: Path
) -> None:
    repo, db = damaged_repo
    before = _digest(db)
    ws = ("--workspace", str(repo))
    code, out, err = cli(capsys, "doctor", *ws)
    assert code == 1
    assert out.startswith(f"path: {db}\nintegrity: damaged\nproblem: ")
    assert "--salvage" in err and f"mv {db} {db}.damaged" in err

    salvaged = tmp_path / "facts.json"
    code, out, err = cli(capsys, "doctor", "--salvage", str(salvaged), "--format", "json", *ws)
    assert code == 1
    report = json.loads(out)
    assert report["ok"] is False and report["problems"]
    facts = json.loads(salvaged.read_text())["facts"]
    # Garbage over two pages loses at most what those pages held; the rest is read back.
    assert 0 < report["salvaged"] == len(facts) <= len(FACTS)
    assert {f["text"] for f in facts} <= set(FACTS)
    assert _digest(db) == before

    # The documented recovery: move the file aside, import the salvage into a fresh one.
    db.rename(f"{db}.damaged")
    code, out, _ = cli(capsys, "import", str(salvaged), *ws)
    assert code == 0 and out == f"imported {len(facts)} facts\n"
    code, out, _ = cli(capsys, "doctor", *ws)
    assert code == 0 and out == f"path: {db}\nintegrity: ok\n"


def test_memory_doctor_sound_and_missing_databases_exit_0(tmp_path: Path, capsys: Cap) -> None:
    repo = make_repo(tmp_path / "repo")
    ws = ("--workspace", str(repo))
    code, out, err = cli(capsys, "doctor", *ws)
    assert code == 0 and out == "" and "nothing to check" in err
    scope = asyncio.run(scope_for(repo))
    db = default_db_path(scope)
    asyncio.run(_seed(db, scope))
    code, out, _ = cli(capsys, "doctor", "--format", "json", *ws)
    assert code == 0
    assert json.loads(out) == {"path": str(db), "ok": True, "problems": []}
    assert asyncio.run(check_integrity(db)) == []


async def test_memory_damage_agent_runs_without_memory_and_says_so(
    damaged_repo: tuple[Path, Path],
) -> None:
    repo, db = damaged_repo
    before = _digest(db)
    async with ScriptedModelServer([Turn(text="Nothing to do.")]) as server:
        env = {
            "PATH": f"{DRIVEROS.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": os.environ.get("HOME", "/tmp"),
            "DRIVEROS_STATE_DIR": os.environ["DRIVEROS_STATE_DIR"],
            "LANG": "C.UTF-8",
            "DRIVEROS_DIAGNOSTICS": "off",
            "OPENAI_API_KEY": "test-key",
            "OPENAI_BASE_URL": server.openai_base_url,
            "OPENAI_MODEL": "scripted",
        }
        proc = await asyncio.create_subprocess_exec(
            str(DRIVEROS),
            "agent",
            "--task",
            "say hi",
            "--memory",
            "--format",
            "ndjson",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=repo,
            start_new_session=True,
        )
        out, err = await proc.communicate()
    events = [json.loads(line) for line in out.decode().splitlines()]
    memory = [e for e in events if e["type"] == "memory"]
    assert [m["action"] for m in memory] == ["error"], err.decode()
    assert memory[0]["detail"] == (
        f"memory unavailable: memory database {db} is damaged: run `driveros memory doctor`"
    )
    assert events[-1]["type"] == "result" and events[-1]["outcome"] == "unverified"
    assert proc.returncode == 2
    assert _digest(db) == before
