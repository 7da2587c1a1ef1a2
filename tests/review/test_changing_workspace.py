"""A workspace that changes while its scratch copy is made (a build, a watcher, an editor).

Files vanish, appear and turn into directories under the copy: every start must still
succeed, and the copy must agree with its own baseline (no change reported right after it).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

import driveros.review._snapshot as snapshot
import driveros.review._snapshot_view as snapshot_view
from driveros._git import GitResult
from driveros.review import ScratchWorkspace
from driveros.review._files import sync_paths
from driveros.review._stage import read_entries
from tests.review._repo import available_strategies, git, make_repo

_FILES = 40


def _workspace(tmp_path: Path, plain: bool) -> Path:
    """Tracked files (half of them modified) plus untracked ones; ``plain``: the same files in
    a directory that is no repository."""
    files = {f"src/t{i}.txt": f"tracked {i}\n" for i in range(_FILES)}
    files[".gitignore"] = "*.o\n"  # ignored: hidden in a view, never copied
    if plain:
        root = tmp_path / "plain"
        root.mkdir()
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
    else:
        root = make_repo(tmp_path / "proj", files)
    for i in range(0, _FILES, 2):
        (root / f"src/t{i}.txt").write_text(f"modified {i}\n")
    (root / "new").mkdir()
    for i in range(_FILES):
        (root / f"new/u{i}.txt").write_text(f"untracked {i}\n")
    return root


def _churn(root: Path, stop: threading.Event) -> None:
    """Delete, recreate and replace-by-a-directory files as fast as possible."""
    n = 0
    while not stop.is_set():
        n += 1
        try:
            if n % 2:
                shutil.rmtree(root / "out", ignore_errors=True)
            else:
                (root / "out/deep").mkdir(parents=True, exist_ok=True)
                (root / "out/deep/x.o").write_text("object\n")
        except OSError:
            pass
        for i in range(_FILES):
            for rel in (f"new/u{i}.txt", f"src/t{i}.txt"):
                p = root / rel
                try:
                    if n % 3 == 0 and i % 5 == 0:
                        if p.is_dir():
                            shutil.rmtree(p)
                        else:
                            p.unlink(missing_ok=True)
                            p.mkdir()
                            (p / "inner.txt").write_text("inner\n")
                    elif p.is_dir():
                        shutil.rmtree(p)
                    elif n % 2:
                        p.unlink(missing_ok=True)
                    else:
                        p.write_text(f"again {n}\n")
                except OSError:
                    pass


_CASES = [
    *((name, False) for name in available_strategies()),
    *((name, True) for name in available_strategies() if name == "overlay"),
    ("copy", True),
]


@pytest.mark.parametrize(("scratch_strategy", "plain"), _CASES, indirect=["scratch_strategy"])
async def test_create_survives_a_workspace_changing_under_it(
    tmp_path: Path, scratch_base: Path, scratch_strategy: str, plain: bool
) -> None:
    root = _workspace(tmp_path, plain)
    stop = threading.Event()
    churner = threading.Thread(target=_churn, args=(root, stop), daemon=True)
    churner.start()
    try:
        for _ in range(8):
            async with await ScratchWorkspace.create(root, base_dir=scratch_base) as scratch:
                assert scratch.strategy == scratch_strategy
                assert await scratch.changes() == []
    finally:
        stop.set()
        churner.join()
    assert list(scratch_base.iterdir()) == []


@pytest.mark.parametrize("scratch_strategy", available_strategies(), indirect=True)
async def test_files_vanishing_after_the_status_listing(
    tmp_path: Path,
    scratch_base: Path,
    scratch_strategy: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Deterministic: what ``git status`` listed is gone (or a directory) when it is read."""
    root = _workspace(tmp_path, plain=False)
    (root / ".git/info/exclude").write_text("*.o\n")
    (root / "out/deep").mkdir(parents=True)
    (root / "out/deep/x.o").write_text("object\n")
    real_status = snapshot.user_status

    async def status_then_change(top: Path, **kwargs: Any) -> GitResult:
        result = await real_status(top, **kwargs)
        for i in range(0, _FILES, 2):
            (root / f"new/u{i}.txt").unlink()  # untracked, listed, gone
            (root / f"src/t{i}.txt").unlink()  # modified, listed, gone
        shutil.rmtree(root / "out")  # ignored (hidden in a view), gone
        for i in (1, 3):
            (root / f"new/u{i}.txt").unlink()
            (root / f"new/u{i}.txt").mkdir()  # listed as a file, now a directory
            (root / f"new/u{i}.txt/inner.txt").write_text("inner\n")
        return result

    # the user's status, as a worktree or copy (_snapshot) and a view (_snapshot_view) read it
    monkeypatch.setattr(snapshot, "user_status", status_then_change)
    monkeypatch.setattr(snapshot_view, "user_status", status_then_change)
    caplog.set_level(logging.INFO, logger=read_entries.__module__)  # where stage() logs
    async with await ScratchWorkspace.create(root, base_dir=scratch_base) as scratch:
        assert await scratch.changes() == []
        # A file that vanished is not in the baseline: as if deleted a moment earlier.
        assert not (scratch.path / "new/u0.txt").exists()
        assert not (scratch.path / "src/t0.txt").exists()
        assert (scratch.path / "new/u5.txt").read_text() == "untracked 5\n"
        assert (scratch.path / "src/t1.txt").read_text() == "tracked 1\n"
        scratch_files = git(
            scratch.path, "--git-dir", str(scratch._lay.git_dir), "ls-files"
        ).splitlines()
        assert "new/u0.txt" not in scratch_files and "src/t0.txt" not in scratch_files
        assert "new/u5.txt" in scratch_files
        assert "new/u1.txt" not in scratch_files  # a directory now: not taken
    if scratch_strategy == "overlay":  # the view's baseline is hashed from the listing
        assert "the workspace changed while it was copied" in caplog.text
    assert list(scratch_base.iterdir()) == []


def test_sync_paths_treats_a_vanished_source_as_deleted(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    (dst / "gone.txt").write_text("old\n")  # checked out, gone from the workspace
    (src / "kept.txt").write_text("kept\n")
    (src / "dir.txt").mkdir()  # a file turned directory: not copied
    sync_paths(src, dst, ["gone.txt", "never.txt", "kept.txt", "dir.txt", "no/such/f"])
    assert sorted(os.listdir(dst)) == ["kept.txt"]
    assert (dst / "kept.txt").read_text() == "kept\n"


def test_sync_paths_never_copies_through_a_directory_swapped_for_a_link(tmp_path: Path) -> None:
    """The attacker: ``d/`` was a directory when git listed ``d/key``, and is a link to a
    directory outside the workspace when the copier reads it. Nothing outside is copied."""
    src, dst, outside = tmp_path / "src", tmp_path / "dst", tmp_path / "outside"
    for d in (src, dst, outside):
        d.mkdir()
    (outside / "key").write_text("secret\n")
    (src / "d").symlink_to(outside)  # swapped after the listing
    (src / "deep/er").mkdir(parents=True)
    (src / "deep/er/f.txt").write_text("mine\n")
    (src / "deep/link").symlink_to(outside)
    sync_paths(src, dst, ["d/key", "deep/er/f.txt", "deep/link/key"])
    assert not (dst / "d").exists()
    assert not (dst / "deep/link").exists()
    assert (dst / "deep/er/f.txt").read_text() == "mine\n"
    assert "secret" not in {p.read_text() for p in dst.rglob("*") if p.is_file()}


def test_read_entries_reads_each_path_once_and_never_through_a_link(tmp_path: Path) -> None:
    """The fallback's reader: what is there now, nothing outside the tree."""
    git_dir = tmp_path / "state.git"
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True)
    tree = tmp_path / "tree"
    (tree / "d").mkdir(parents=True)
    (tree / "d/f.txt").write_text("f\n")
    (tree / "run.sh").write_text("#!/bin/sh\n")
    (tree / "run.sh").chmod(0o755)
    (tree / "link").symlink_to("d/f.txt")
    (tree / "became_dir").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("secret\n")
    (tree / "swapped").symlink_to(outside)  # was a directory when listed
    listed = ["d/f.txt", "run.sh", "link", "became_dir", "gone.txt", "swapped/secret"]
    info = read_entries(git_dir, tree, listed)
    lines = [entry.decode() for entry in info.split(b"\0") if entry]
    by_path = {line.split("\t")[1]: line.split("\t")[0].split() for line in lines}
    zero = ["0", "0" * 40]
    assert by_path["became_dir"] == by_path["gone.txt"] == by_path["swapped/secret"] == zero
    assert by_path["d/f.txt"][0] == "100644" and by_path["run.sh"][0] == "100755"
    assert by_path["link"][0] == "120000"
    cat = ["git", "--git-dir", str(git_dir), "cat-file", "-p"]
    assert subprocess.run([*cat, by_path["d/f.txt"][1]], capture_output=True).stdout == b"f\n"
    assert subprocess.run([*cat, by_path["link"][1]], capture_output=True).stdout == b"d/f.txt"
