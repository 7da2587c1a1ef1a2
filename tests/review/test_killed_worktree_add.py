"""A ``git worktree add`` killed half-way leaves the user's repository as it was.

git writes a new worktree's administrative entry (``.git/worktrees/<name>``) file by file; a
kill (a cancelled run) can stop it after any write, even between creating a file and filling
it. A ``git`` first on PATH plays the real one's writes up to a chosen point and then kills
itself, so every such point is reached deterministically, through the real scratch code.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from driveros import DriverosError
from driveros.review import ScratchWorkspace
from tests.review._repo import git, make_repo

#: The writes of git 2.39's ``add_worktree`` (builtin/worktree.c), in order; the fake git is
#: killed right after the one it is given (by number, from 1), before anything later.
_WRITES = (
    'mkdir "$entry"',
    ': > "$entry/locked"',
    'printf "initializing\\n" > "$entry/locked"',
    'mkdir -p "$path" && : > "$entry/gitdir"',
    'printf "%s\\n" "$path/.git" > "$entry/gitdir"',
    'printf "gitdir: %s\\n" "$entry" > "$path/.git"',
    ': > "$entry/HEAD"',
    'echo 0000000000000000000000000000000000000000 > "$entry/HEAD"',
    ': > "$entry/commondir"',
    'echo ../.. > "$entry/commondir"',
)

_FAKE = """#!/bin/sh
# The first `worktree add` plays git's writes up to step {stop}, then dies of SIGKILL;
# everything else (and every later add) is the real git.
real={real}
marker={marker}
case " $* " in
  *" worktree add "*) ;;
  *) exec "$real" "$@" ;;
esac
if ! mkdir "$marker" 2>/dev/null; then exec "$real" "$@"; fi
prev=; before=; last=
for a in "$@"; do
  [ "$prev" = "-C" ] && top=$a
  prev=$a; before=$last; last=$a
done
path=$before
common=$("$real" -C "$top" rev-parse --path-format=absolute --git-common-dir) || exit 1
entry="$common/worktrees/$(basename "$path")"
mkdir -p "$common/worktrees"
{steps}
"""


def _fake_git(where: Path, stop: int) -> Path:
    real = shutil.which("git")
    assert real is not None
    steps = "\n".join(
        f"{write}\n{'kill -9 $$' if n == stop else ':'}" for n, write in enumerate(_WRITES, 1)
    )
    where.mkdir()
    fake = where / "git"
    fake.write_text(
        _FAKE.format(real=real, marker=where / "added", stop=stop, steps=steps), encoding="utf-8"
    )
    fake.chmod(0o755)
    return where


def _usable(repo: Path) -> None:
    """The user's own git commands work in ``repo`` and see no worktree but the main one."""
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    git(repo, "rev-list", "--all")  # reads every worktree's HEAD, as gc and fsck do
    git(repo, "worktree", "prune")
    git(repo, "status", "--porcelain")
    entries = repo / ".git" / "worktrees"
    assert not entries.exists() or list(entries.iterdir()) == []


@pytest.mark.parametrize("stop", range(1, len(_WRITES) + 1))
async def test_killed_worktree_add_leaves_the_repository_usable(
    tmp_path: Path, scratch_base: Path, monkeypatch: pytest.MonkeyPatch, stop: int
) -> None:
    repo = make_repo(tmp_path / "proj", {"a.py": "A = 1\n"})
    fake = _fake_git(tmp_path / "bin", stop)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    with pytest.raises(DriverosError):
        await ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="worktree")
    assert (fake / "added").is_dir()  # the fake did run, and was killed
    assert list(scratch_base.iterdir()) == []
    _usable(repo)


@pytest.mark.parametrize("stop", [2, 5, 9])
async def test_killed_worktree_add_does_not_fail_a_concurrent_one(
    tmp_path: Path, scratch_base: Path, monkeypatch: pytest.MonkeyPatch, stop: int
) -> None:
    """The run whose add was killed cleans its entry before the next add on the repository
    starts: a half-written entry would make that add fail (git reads every entry first)."""
    repo = make_repo(tmp_path / "proj", {"a.py": "A = 1\n"})
    fake = _fake_git(tmp_path / "bin", stop)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    results = await asyncio.gather(
        *(
            ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="worktree")
            for _ in range(3)
        ),
        return_exceptions=True,
    )
    made = [r for r in results if isinstance(r, ScratchWorkspace)]
    failed = [r for r in results if not isinstance(r, ScratchWorkspace)]
    try:
        assert len(made) == 2, failed
        assert all(isinstance(f, DriverosError) for f in failed)
    finally:
        await asyncio.gather(*(s.aclose() for s in made))
    assert list(scratch_base.iterdir()) == []
    _usable(repo)


def test_git_helper_error_says_what_git_said(tmp_path: Path) -> None:
    with pytest.raises(subprocess.CalledProcessError) as caught:
        git(tmp_path / "nowhere", "status")
    assert "cannot change to" in str(caught.value)
