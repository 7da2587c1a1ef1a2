"""Helpers for review tests: real git repositories and directory snapshots."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest


class GitFailed(subprocess.CalledProcessError):
    """A failed ``git`` whose message says what git said."""

    def __str__(self) -> str:
        return f"{super().__str__()}\n{self.stderr}"


def git(cwd: Path, *args: str) -> str:
    argv = ["git", "-C", str(cwd), *args]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise GitFailed(proc.returncode, argv, proc.stdout, proc.stderr)
    return proc.stdout


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


def _unescape(text: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def views_of(repo: Path, *, below: bool = False) -> list[str]:
    """Mount points of overlay scratch views whose lower layer is ``repo`` (``below``: or
    anything below it). Any strategy's leftovers are found from the repository, wherever the
    scratch directory is."""
    top = str(repo.resolve())
    found: list[str] = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
        for line in fh:
            left, _, right = line.partition(" - ")
            fields, options = left.split(" "), right.split()
            if len(options) < 3 or options[0] != "overlay":
                continue
            for option in (_unescape(o) for o in options[2].split(",")):
                lower = option.removeprefix("lowerdir=")
                if option != lower and (lower == top or (below and lower.startswith(top + "/"))):
                    found.append(_unescape(fields[4]))
    return found


def scratch_copies(repo: Path) -> list[str]:
    """Every scratch copy of ``repo`` still there: its worktrees but the main one (none while
    a ``git worktree add`` is half-way and the list cannot be read) plus mounted views."""
    proc = subprocess.run(
        ["git", "-C", str(repo), "worktree", "list", "--porcelain"], capture_output=True, text=True
    )
    top = str(repo.resolve())
    worktrees = [
        line.split(" ", 1)[1]
        for line in proc.stdout.splitlines()
        if line.startswith("worktree ") and line.split(" ", 1)[1] != top
    ]
    return (worktrees if proc.returncode == 0 else []) + views_of(repo)


#: The uid the docker tests give the user's repository (the container runs as its owner).
OWNER = 65532


def hand_over(repo: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Give ``repo`` to :data:`OWNER` (as a user's own repository is theirs) and tell git, run
    as root with ``HOME=home``, to trust it. Skips unless root (CI runs as root)."""
    if os.geteuid() != 0:
        pytest.skip("giving the repository to another owner needs root (CI runs as root)")
    home.mkdir()
    (home / ".gitconfig").write_text("[safe]\n\tdirectory = *\n")
    monkeypatch.setenv("HOME", str(home))
    subprocess.run(["chown", "-R", f"{OWNER}:{OWNER}", str(repo)], check=True)
