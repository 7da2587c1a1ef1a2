"""Issue 35's leftovers: driveros' own writes follow no link a workspace (or the agent, in a
scratch copy) planted. ``.git/info/exclude`` (a memory store made in the workspace) and the
review's writes into a copy (an open buffer adopted, a removal's empty parents) are reached
without following a link; what lies outside stays as it was."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from driveros._safe_open import PlantedLinkError
from driveros.memory._scope import exclude_from_git
from driveros.review._files import atomic_write, remove_file, sync_paths, write_overlays


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "exclude").write_text("# the user's own file\n")
    (outside / "x.py").write_text("OUTSIDE = 1\n")
    return outside


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    return repo


@pytest.mark.parametrize("planted", ["info", "info/exclude"])
async def test_exclude_from_git_follows_no_planted_link(tmp_path: Path, planted: str) -> None:
    outside = _outside(tmp_path)
    repo = _repo(tmp_path)
    info = repo / ".git" / "info"
    if planted == "info":
        if info.exists():
            shutil.rmtree(info)
        info.symlink_to(outside)
    else:
        info.mkdir(exist_ok=True)
        (info / "exclude").unlink(missing_ok=True)
        (info / "exclude").symlink_to(outside / "exclude")
    before = _snapshot(outside)
    assert await exclude_from_git(repo / ".agent-memory.db") is False
    assert _snapshot(outside) == before


async def test_exclude_from_git_still_writes_the_real_file(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    assert await exclude_from_git(repo / ".agent-memory.db") is True
    assert "/.agent-memory.db*" in (repo / ".git" / "info" / "exclude").read_text()


@pytest.mark.parametrize("mode", ["100644", "120000"])
def test_atomic_write_in_a_copy_follows_no_planted_directory(tmp_path: Path, mode: str) -> None:
    outside = _outside(tmp_path)
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "sub").symlink_to(outside)
    before = _snapshot(outside)
    with pytest.raises(PlantedLinkError):
        atomic_write(copy / "sub" / "new" / "x.py", b"AGENT = 1\n", mode=mode, root=copy)
    with pytest.raises(PlantedLinkError):
        atomic_write(copy / "sub" / "x.py", b"AGENT = 1\n", mode=mode, root=copy)
    assert _snapshot(outside) == before
    assert sorted(p.name for p in outside.iterdir()) == ["exclude", "x.py"]


def test_atomic_write_in_a_copy_makes_real_directories(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    atomic_write(copy / "a" / "b" / "x.py", b"X = 1\n", mode="100755", root=copy)
    atomic_write(copy / "a" / "link", b"b/x.py", mode="120000", root=copy)
    assert (copy / "a" / "b" / "x.py").read_bytes() == b"X = 1\n"
    assert (copy / "a" / "b" / "x.py").stat().st_mode & 0o111
    assert (copy / "a" / "link").readlink() == Path("b/x.py")


def test_remove_file_follows_no_planted_directory(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "sub").symlink_to(outside)
    before = _snapshot(outside)
    with pytest.raises(PlantedLinkError):
        remove_file(root, root / "sub" / "x.py")
    assert _snapshot(outside) == before
    assert outside.is_dir()


def test_remove_file_removes_empty_parents(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "x.py").write_text("x")
    (root / "keep.txt").write_text("k")
    remove_file(root, root / "a" / "b" / "x.py")
    assert sorted(p.name for p in root.iterdir()) == ["keep.txt"]


def test_sync_into_a_copy_follows_no_link_there(tmp_path: Path) -> None:
    """Making the copy: a link where the source has a directory is replaced, never written
    or removed through."""
    outside = _outside(tmp_path)
    src, copy = tmp_path / "src", tmp_path / "copy"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "x.py").write_text("SOURCE = 1\n")
    (src / "gone").mkdir()
    copy.mkdir()
    (copy / "sub").symlink_to(outside)
    (copy / "gone").symlink_to(outside)
    before = _snapshot(outside)
    sync_paths(src, copy, ["sub/x.py", "gone/x.py"])
    assert _snapshot(outside) == before
    assert not (copy / "sub").is_symlink()
    assert (copy / "sub" / "x.py").read_text() == "SOURCE = 1\n"


def test_buffers_written_into_a_copy_follow_no_link_there(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "sub").symlink_to(outside)
    (copy / "top.py").symlink_to(outside / "x.py")
    before = _snapshot(outside)
    write_overlays(copy, {"sub/x.py": "BUFFER = 1\n", "top.py": "TOP = 1\r\n"})
    assert _snapshot(outside) == before
    assert (copy / "sub" / "x.py").read_text() == "BUFFER = 1\n"
    assert (copy / "top.py").read_bytes() == b"TOP = 1\r\n"
    assert not (copy / "top.py").is_symlink()
