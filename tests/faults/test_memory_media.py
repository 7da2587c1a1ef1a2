"""Row 12 of issue 15 (memory): a read-only medium and a full disk say exactly that.

Both are real: a tmpfs remounted read-only (root ignores file modes, a mount does not), and
a tiny tmpfs filled to the last block. SQLite's own words for these ("unable to open database
file", "disk I/O error") must not reach the user.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from driveros import MemoryDiskFullError, MemoryReadOnlyError
from driveros.cli._main import main
from driveros.memory import MemoryStore, Provenance

Cap = pytest.CaptureFixture[str]
ONE_FACT = {
    "id": 1,
    "scope": "s",
    "text": "a new fact",
    "created_at": "2026-01-01T00:00:00Z",
    "updated_at": "2026-01-01T00:00:00Z",
}


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A private 1 MiB tmpfs (skipped, with the reason, where mounting is impossible)."""
    where = tmp_path / "mnt"
    where.mkdir()
    try:
        _mount("-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", str(where))
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or exc
        pytest.skip(f"cannot mount a tmpfs here (needs root/CAP_SYS_ADMIN): {detail}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, capture_output=True)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("DRIVEROS_MEMORY_PATH", "MNEME_EMBED_MODEL", "OLLAMA_HOST", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


async def _seed(db: Path) -> None:
    async with await MemoryStore.open(db, scope="s") as store:
        await store.apply(adds=["uses make", "tests run with pytest"], provenance=Provenance())


def cli(capsys: Cap, *args: str) -> tuple[int, str, str]:
    code = main(["memory", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _fill(where: Path) -> None:
    fd = os.open(where / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)
    assert os.statvfs(where).f_bavail == 0


def test_memory_read_only_medium_says_read_only(tmpfs: Path, capsys: Cap) -> None:
    db = tmpfs / "mem.db"
    asyncio.run(_seed(db))
    _mount("-o", "remount,ro", str(tmpfs))
    export = tmpfs.parent / "export.json"
    export.write_text(json.dumps({"facts": [ONE_FACT]}))
    for args in (
        ("list", "--path", str(db)),
        ("forget", "1", "--path", str(db)),
        ("import", str(export), "--path", str(db)),
        ("import", str(export), "--path", str(tmpfs / "new.db")),
    ):
        code, out, err = cli(capsys, *args)
        target = Path(args[-1])
        assert code == 1, (args, err)
        assert err == f"driveros: memory database {target} is read-only\n", args
        assert out == ""
    # The doctor only reads: it still checks a database on read-only media.
    code, out, _ = cli(capsys, "doctor", "--path", str(db))
    assert code == 0 and out == f"path: {db}\nintegrity: ok\n"


async def test_memory_read_only_open_is_typed(tmpfs: Path) -> None:
    db = tmpfs / "mem.db"
    await _seed(db)
    _mount("-o", "remount,ro", str(tmpfs))
    with pytest.raises(MemoryReadOnlyError, match=r"is read-only$"):
        await MemoryStore.open(db, scope="s")


def test_memory_full_disk_says_no_space(tmpfs: Path, capsys: Cap) -> None:
    db = tmpfs / "mem.db"
    asyncio.run(_seed(db))
    _fill(tmpfs)
    export = tmpfs.parent / "export.json"
    export.write_text(json.dumps({"facts": [ONE_FACT]}))
    for args in (
        ("forget", "1", "--path", str(db)),
        ("import", str(export), "--path", str(tmpfs / "new.db")),
    ):
        code, out, err = cli(capsys, *args)
        target = Path(args[-1])
        assert code == 1, (args, err)
        assert err == f"driveros: no space left on device writing {target}\n", args
        assert "disk I/O error" not in err and out == ""


async def test_memory_full_disk_mid_write_is_typed_and_loses_nothing(tmpfs: Path) -> None:
    db = tmpfs / "mem.db"
    await _seed(db)
    store = await MemoryStore.open(db, scope="s")
    try:
        _fill(tmpfs)
        big = ["a long fact that needs new pages " * 400 + str(i) for i in range(40)]
        with pytest.raises(MemoryDiskFullError) as err:
            await store.apply(adds=big, provenance=Provenance())
        assert str(err.value) == f"no space left on device writing {db}"
        (tmpfs / "filler").unlink()
        # The failed batch left nothing behind; what was there before is intact.
        assert sorted(f.text for f in await store.list_facts()) == [
            "tests run with pytest",
            "uses make",
        ]
    finally:
        await store.aclose()
