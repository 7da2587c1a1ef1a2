"""Helpers for review tests: real git repositories and directory snapshots."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True
    ).stdout


def make_repo(path: Path, files: dict[str, str | bytes]) -> Path:
    """A repository at ``path`` with ``files`` committed on branch main."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    git(path, "config", "commit.gpgsign", "false")
    write_files(path, files)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "init")
    return path


def write_files(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)


def tree(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` (``.git`` excluded) -> its bytes; symlinks -> b'-> target'."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            if name == ".git":
                continue
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            out[rel] = b"-> " + os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
    return out


def available_strategies() -> list[str]:
    """Scratch strategies to run a test under: ``worktree`` always, ``overlay`` when this
    machine can mount one (root, as in CI)."""
    from driveros.review import scratch_strategies

    return ["worktree"] + (["overlay"] if scratch_strategies()["overlay"] is None else [])
