"""Issue 28 rows 3 and 4: damage SQLite's quick check does not see.

Row 3: one byte of a fact's scope flipped in the table's page, so the table and its index
disagree. Row 4: one byte of a fact's text made invalid UTF-8. Both are byte-level damage of
a real database written by driveros and closed. ``doctor`` calls the file damaged, and every
command that would write refuses with the same words, leaving the file unchanged; a decode
error met half-way through a command names that command and points to ``doctor``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from driveros import MemoryDamagedError
from driveros.cli._main import main
from driveros.memory import (
    MemoryStore,
    Provenance,
    check_integrity,
    default_db_path,
    salvage_facts,
    scope_for,
)
from tests.memory.conftest import make_repo

Cap = pytest.CaptureFixture[str]
FACTS = [f"fact {i}: module {i} builds with make target-{i}" for i in range(40)]
NEW = {
    "id": 1,
    "scope": "s",
    "text": "a brand new fact",
    "created_at": "2026-01-01T00:00:00Z",
    "updated_at": "2026-01-01T00:00:00Z",
}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("DRIVEROS_MEMORY_PATH", "MNEME_EMBED_MODEL", "OLLAMA_HOST", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


async def _seed(db: Path, scope: str) -> None:
    async with await MemoryStore.open(db, scope=scope) as store:
        for start in range(0, len(FACTS), 10):
            await store.apply(adds=FACTS[start : start + 10], provenance=Provenance(run_id="r"))


def _flip(db: Path, needle: bytes, offset: int, value: int | None = None) -> None:
    """Change one byte of the table row holding ``needle`` (the row's bytes, on its page)."""
    data = bytearray(db.read_bytes())
    at = data.find(needle)
    assert at >= 0 and data.find(needle, at + 1) < 0, "the row must be on one page, once"
    data[at + offset] = data[at + offset] ^ 0x01 if value is None else value
    db.write_bytes(bytes(data))


def _digest(db: Path) -> str:
    return hashlib.sha256(db.read_bytes()).hexdigest()


def _age(db: Path) -> None:
    """Make the sound file old enough for its check to be remembered (see ``_check``)."""
    old = time.time() - 60
    os.utime(db, (old, old))


@pytest.fixture
def repo_db(tmp_path: Path, capsys: Cap) -> tuple[Path, Path, str]:
    repo = make_repo(tmp_path / "repo")
    scope = asyncio.run(scope_for(repo))
    db = default_db_path(scope)
    asyncio.run(_seed(db, scope))
    assert not Path(f"{db}-wal").exists()
    _age(db)
    # A sound open first: its result is remembered, the damage after it must still be seen.
    assert main(["memory", "list", "--workspace", str(repo)]) == 0
    capsys.readouterr()
    return repo, db, scope


def _refusals(capsys: Cap, repo: Path, db: Path, tmp_path: Path) -> None:
    export = tmp_path / "export.json"
    export.write_text(json.dumps({"facts": [NEW]}))
    before = _digest(db)
    message = f"memory database {db} is damaged: run `driveros memory doctor`"
    for args in (("forget", "3"), ("import", str(export)), ("undo",), ("list",)):
        code = main(["memory", *args, "--workspace", str(repo)])
        out, err = capsys.readouterr()
        assert code == 1, (args, out, err)
        assert message in err and out == "" and "Traceback" not in err, args
    assert _digest(db) == before
    wal = Path(f"{db}-wal")
    assert not wal.exists() or wal.stat().st_size == 0


def _doctor_says_damaged(capsys: Cap, repo: Path, db: Path, words: str) -> None:
    before = _digest(db)
    code = main(["memory", "doctor", "--format", "json", "--workspace", str(repo)])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["ok"] is False
    assert any(words in p for p in report["problems"]), report
    assert _digest(db) == before


def test_memory_index_damage_refuses_every_write(
    repo_db: tuple[Path, Path, str], capsys: Cap, tmp_path: Path
) -> None:
    repo, db, scope = repo_db
    # the row of fact 7: its scope, then its text; flip a byte inside the scope
    _flip(db, scope.encode() + FACTS[7].encode(), len(scope) - 2)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]  # what open ran
    finally:
        conn.close()
    _doctor_says_damaged(capsys, repo, db, "missing from index")
    _refusals(capsys, repo, db, tmp_path)
    # salvage reads every row (the flipped one under its damaged scope)
    found = asyncio.run(salvage_facts(db, scope=None))
    assert sorted(f.text for f in found.facts) == sorted(FACTS)


def test_memory_text_damage_refuses_every_write(
    repo_db: tuple[Path, Path, str], capsys: Cap, tmp_path: Path
) -> None:
    repo, db, scope = repo_db
    _flip(db, scope.encode() + FACTS[7].encode(), len(scope) + 3, 0xFF)
    assert asyncio.run(check_integrity(db, full=False)) == []
    _doctor_says_damaged(capsys, repo, db, "text is not valid UTF-8")
    _refusals(capsys, repo, db, tmp_path)
    # salvage still recovers every fact (the damaged one with a replacement character)
    found = asyncio.run(salvage_facts(db, scope=scope))
    assert len(found.facts) == len(FACTS)


async def test_memory_decode_error_names_the_command_and_points_to_doctor(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.db"
    async with await MemoryStore.open(db, scope="s") as store:
        await store.apply(adds=["uses make", "tests run with pytest"], provenance=Provenance())
        # damage arrives while the store is open (another program, a bad sector)
        raw = sqlite3.connect(db)
        raw.execute("UPDATE facts SET text = CAST(x'66ff6f' AS TEXT) WHERE id = 2")
        raw.commit()
        raw.close()
        with pytest.raises(MemoryDamagedError) as err:
            await store.import_facts([])  # reads the known facts first
        assert str(err.value) == (
            f"memory import failed: memory database {db} is damaged: run `driveros memory doctor`"
        )
        with pytest.raises(MemoryDamagedError, match="is damaged: run"):
            await store.forget(1)
        assert store.damaged
        assert (await store.get(1)).active  # nothing was written
    assert await check_integrity(db) == ["facts id 2: text is not valid UTF-8"]


async def test_memory_quick_open_checks_fully_before_the_first_write(tmp_path: Path) -> None:
    """An agent run opens with ``check="quick"`` (recall stays fast); its first write runs
    the full check and refuses."""
    db = tmp_path / "m.db"
    await _seed(db, "s")
    _flip(db, b"s" + FACTS[7].encode(), 0, ord("t"))  # the row's scope "s" becomes "t"
    before = _digest(db)
    async with await MemoryStore.open(db, scope="s", check="quick") as store:
        assert len(await store.search("module builds with make", 3)) == 3  # reads work
        with pytest.raises(MemoryDamagedError, match="is damaged: run `driveros memory doctor`"):
            await store.apply(adds=["a new fact"], provenance=Provenance(run_id="r2"))
        assert store.damaged
    assert _digest(db) == before
    with pytest.raises(MemoryDamagedError):
        await MemoryStore.open(db, scope="s")  # the default: the full check at open
