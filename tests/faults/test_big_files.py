"""Row 8 of issue 15: big untracked files are left out of scratch copies, never stored twice,
and the run says which."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from driveros.review import ConflictError, ScratchWorkspace
from driveros.review._scratch import DEFAULT_MAX_FILE_SIZE
from tests.review._repo import make_repo

BIG = os.urandom(2 * 1024 * 1024)


def _usage(root: Path) -> int:
    """Disk used below ``root``, not counting what a mounted view shows of the user's files."""
    total = 0
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not os.path.ismount(os.path.join(dirpath, d))]
        for name in files:
            total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


def _stored(git_dir: Path, data: bytes) -> bool:
    sha = (
        subprocess.run(
            ["git", "hash-object", "--stdin"], input=data, capture_output=True, check=True
        )
        .stdout.decode()
        .strip()
    )
    probe = subprocess.run(
        ["git", f"--git-dir={git_dir}", "cat-file", "-e", sha], capture_output=True
    )
    return probe.returncode == 0


@pytest.fixture(params=["worktree", "plain"])
def workspace(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    files: dict[str, str | bytes] = {"a.py": "A = 1\n"}
    if request.param == "worktree":
        ws = make_repo(tmp_path / "ws", files)
    else:
        ws = tmp_path / "ws"
        ws.mkdir()
        (ws / "a.py").write_text("A = 1\n")
    (ws / "data").mkdir()
    (ws / "data" / "big [1].bin").write_bytes(BIG)
    (ws / "small.txt").write_text("small\n")
    return ws


async def test_big_untracked_file_is_left_out_and_not_stored(
    workspace: Path, tmp_path: Path, scratch_strategy: str
) -> None:
    base = tmp_path / "scratch"
    base.mkdir()
    async with await ScratchWorkspace.create(
        workspace, base_dir=base, max_file_size=len(BIG) - 1
    ) as scratch:
        assert scratch.left_out == ("data/big [1].bin",)
        # A view shows it, read-only through the lower layer: neither copied nor hashed.
        seen = scratch_strategy == "overlay"
        assert (scratch.path / "data" / "big [1].bin").exists() == seen
        assert (scratch.path / "small.txt").read_text() == "small\n"
        assert await scratch.changes() == []
        root = next(base.iterdir())
        assert not _stored(root / "state" / "git", BIG)
        assert _usage(root) < len(BIG)

        # The agent writing that path is a proposal like any other, and applying it meets
        # the user's file: a conflict, the user's file untouched.
        (scratch.path / "data").mkdir(exist_ok=True)
        (scratch.path / "data" / "big [1].bin").write_text("replaced\n")
        assert [(c.path, c.action) for c in await scratch.changes()] == [
            ("data/big [1].bin", "create")
        ]
        with pytest.raises(ConflictError):
            await scratch.apply()
    assert (workspace / "data" / "big [1].bin").read_bytes() == BIG
    assert list(base.iterdir()) == []


async def test_big_file_limit_from_the_environment(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DRIVEROS_SCRATCH_MAX_FILE_SIZE", "1M")
    async with await ScratchWorkspace.create(workspace, base_dir=tmp_path) as scratch:
        assert scratch.left_out == ("data/big [1].bin",)
    monkeypatch.setenv("DRIVEROS_SCRATCH_MAX_FILE_SIZE", "0")  # no limit
    async with await ScratchWorkspace.create(workspace, base_dir=tmp_path) as scratch:
        assert scratch.left_out == ()
        assert (scratch.path / "data" / "big [1].bin").read_bytes() == BIG


async def test_default_limit_keeps_small_files(workspace: Path, tmp_path: Path) -> None:
    assert DEFAULT_MAX_FILE_SIZE == 10 * 1024 * 1024
    async with await ScratchWorkspace.create(workspace, base_dir=tmp_path) as scratch:
        assert scratch.left_out == ()
        assert (scratch.path / "data" / "big [1].bin").read_bytes() == BIG


async def test_tracked_big_file_is_checked_out_not_left_out(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws", {"big.bin": BIG})
    async with await ScratchWorkspace.create(
        repo, base_dir=tmp_path, max_file_size=1024
    ) as scratch:
        assert scratch.left_out == ()
        assert (scratch.path / "big.bin").read_bytes() == BIG


async def test_overlay_over_a_big_file_is_written(workspace: Path, tmp_path: Path) -> None:
    async with await ScratchWorkspace.create(
        workspace,
        base_dir=tmp_path,
        max_file_size=1024,
        overlays={"data/big [1].bin": "buffer\n"},
    ) as scratch:
        assert scratch.left_out == ()
        assert (scratch.path / "data" / "big [1].bin").read_text() == "buffer\n"


async def test_big_files_in_a_subdirectory_workspace(tmp_path: Path, scratch_strategy: str) -> None:
    repo = make_repo(tmp_path / "repo", {"sub/a.py": "A = 1\n", "other/b.py": "B = 1\n"})
    (repo / "sub" / "big.bin").write_bytes(BIG)
    (repo / "other" / "big.bin").write_bytes(BIG)
    async with await ScratchWorkspace.create(
        repo / "sub", base_dir=tmp_path, max_file_size=1024
    ) as scratch:
        assert scratch.left_out == ("big.bin",)
        seen = scratch_strategy == "overlay"  # seen through the view, never copied
        assert (scratch.path / "big.bin").exists() == seen
        assert (scratch.path.parent / "other" / "big.bin").exists() == seen
        assert _usage(next(tmp_path.glob("driveros-scratch-*"))) < len(BIG)


async def test_run_says_which_files_were_left_out(tmp_path: Path) -> None:
    from driveros.testing import ScriptedModelServer, Turn
    from tests.cli.conftest import cli_environ, start_cli

    repo = make_repo(tmp_path / "repo", {"a.py": "A = 1\n"})
    (repo / "dump.sql").write_bytes(BIG)
    args = ("--task", "t", "--review", "--review-action", "discard", "--provider", "openai")
    async with ScriptedModelServer([Turn(text="ok"), Turn(text="ok")]) as model:
        env = cli_environ(model) | {"DRIVEROS_SCRATCH_MAX_FILE_SIZE": "1M"}
        proc = await start_cli(*args, "--format", "ndjson", env=env, cwd=repo)
        out, err = await proc.communicate()
        assert proc.returncode in (0, 2), err.decode()
        started = [
            e for e in map(json.loads, out.decode().splitlines()) if e["type"] == "run_started"
        ]
        assert [e["left_out"] for e in started] == [["dump.sql"]]

        proc = await start_cli(*args, "--format", "text", env=env, cwd=repo)
        _, err = await proc.communicate()
    assert "left out of the scratch copy (untracked, over the size limit): dump.sql" in err.decode()
