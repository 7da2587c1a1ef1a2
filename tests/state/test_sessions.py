"""Garbage collection of the sessions ``driveros acp`` keeps: real files, real mtimes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from driveros.state import SESSION_MAX_AGE_S, SESSIONS_DIR, collect_garbage

DAY = 24 * 3600.0


def _session(state: Path, n: int, *, age_days: float) -> Path:
    folder = state / SESSIONS_DIR
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"{n:032x}.json"
    path.write_text(json.dumps({"version": 1, "cwd": "/w", "mode": "ask"}))
    when = time.time() - age_days * DAY
    os.utime(path, (when, when))
    return path


async def test_gc_removes_sessions_unused_longer_than_the_retention(tmp_path: Path) -> None:
    assert SESSION_MAX_AGE_S == 30 * DAY
    old = _session(tmp_path, 1, age_days=31)
    recent = _session(tmp_path, 2, age_days=29)
    today = _session(tmp_path, 3, age_days=0)
    report = await collect_garbage(state=tmp_path)
    assert [(s.id, s.reason) for s in report.sessions] == [(old.stem, "expired")]
    assert not old.exists()
    assert recent.exists() and today.exists()
    assert report.errors == []
    assert "1 kept ACP session past the retention" in report.summary()
    again = await collect_garbage(state=tmp_path)
    assert again.sessions == []
    assert again.summary() == "nothing to remove"


async def test_gc_keeps_only_the_most_recently_used_sessions(tmp_path: Path) -> None:
    paths = [_session(tmp_path, n, age_days=n) for n in range(1, 6)]  # 1 day old ... 5 days
    report = await collect_garbage(state=tmp_path, session_max_count=3)
    assert sorted((s.id, s.reason) for s in report.sessions) == [
        (paths[3].stem, "over_count"),
        (paths[4].stem, "over_count"),
    ]
    assert [p.exists() for p in paths] == [True, True, True, False, False]


async def test_gc_touches_only_session_files(tmp_path: Path) -> None:
    folder = tmp_path / SESSIONS_DIR
    outside = tmp_path / "precious.json"
    outside.write_text("{}")
    old = time.time() - 90 * DAY
    os.utime(outside, (old, old))
    folder.mkdir()
    link = folder / f"{7:032x}.json"
    link.symlink_to(outside)
    directory = folder / f"{8:032x}.json"
    directory.mkdir()
    other = folder / "notes.json"
    other.write_text("{}")
    stale_tmp = folder / ".session-abc"
    fresh_tmp = folder / ".session-def"
    for path in (directory, other, stale_tmp):
        path.touch() if not path.exists() else None
        os.utime(path, (old, old))
    fresh_tmp.touch()
    report = await collect_garbage(state=tmp_path)
    assert report.sessions == []
    assert link.is_symlink() and outside.read_text() == "{}"
    assert directory.is_dir() and other.exists() and fresh_tmp.exists()
    assert not stale_tmp.exists()


async def test_gc_without_a_sessions_folder_is_quiet(tmp_path: Path) -> None:
    (tmp_path / "leases").mkdir()
    report = await collect_garbage(state=tmp_path)
    assert (report.sessions, report.errors) == ([], [])


def test_driveros_gc_prints_the_sessions_it_removed(tmp_path: Path) -> None:
    old = _session(tmp_path, 1, age_days=40)
    kept = _session(tmp_path, 2, age_days=1)
    env = {**os.environ, "DRIVEROS_STATE_DIR": str(tmp_path)}
    cli = [str(Path(sys.executable).with_name("driveros")), "gc"]
    done = subprocess.run(
        [*cli, "--format", "json"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sessions"] == [{"id": old.stem, "reason": "expired"}]
    assert not old.exists() and kept.exists()
    older = _session(tmp_path, 3, age_days=45)
    done = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"removed kept ACP session {older.stem} (unused too long)" in done.stdout
