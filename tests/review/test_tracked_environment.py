"""A directory named like an environment counts as one (kept visible in a view, linked into a
copy) only when it is itself untracked, ignored or not: a tracked ``env/`` with a tracked
``pyvenv.cfg`` is source, and a view hides the user's ignored files under it like any other
(issue 27, row 5)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from driveros.review import ScratchWorkspace, scratch_strategies
from driveros.sandbox import LocalSandbox
from tests.review._repo import make_repo, write_files

pytestmark = pytest.mark.skipif(
    scratch_strategies()["overlay"] is not None,
    reason=f"no kernel overlay here: {scratch_strategies()['overlay']}",
)

SECRET = "DB_PASSWORD=hunter2-0123456789"


def _repo(root: Path, *, prefix: str = "") -> Path:
    repo = make_repo(
        root,
        {
            ".gitignore": "*.env\nsecrets/\n*.pyc\n.venv/\n",
            f"{prefix}env/pyvenv.cfg": "home = /usr/bin\n",
            f"{prefix}env/settings.py": "DEBUG = False\n",
            f"{prefix}app.py": "print(1)\n",
        },
    )
    write_files(
        repo,
        {
            f"{prefix}env/prod.env": f"{SECRET}\n",
            f"{prefix}env/secrets/db.txt": f"{SECRET}\n",
            # An ignored virtualenv and an untracked (not ignored) one stay environments.
            f"{prefix}.venv/pyvenv.cfg": "home = /usr/bin\n",
            f"{prefix}.venv/lib/site.py": "S = 1\n",
            f"{prefix}venv/pyvenv.cfg": "home = /usr/bin\n",
            f"{prefix}venv/lib/cached.pyc": b"\x00pyc",
        },
    )
    return repo


def _assert_view(top: Path, work: Path) -> None:
    for rel in ("env/prod.env", "env/secrets", "env/secrets/db.txt"):
        assert not os.path.lexists(work / rel), rel
    assert sorted(os.listdir(work / "env")) == ["pyvenv.cfg", "settings.py"]
    assert (work / ".venv/lib/site.py").is_file()
    assert (work / "venv/lib/cached.pyc").is_file()
    assert top.is_dir()


async def test_a_tracked_env_directory_hides_the_users_ignored_files_under_it(
    tmp_path: Path, scratch_base: Path
) -> None:
    repo = _repo(tmp_path / "proj")
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="overlay") as s:
        assert s.strategy == "overlay", s.fallback_reason
        _assert_view(repo, s.path)
        assert await s.changes() == []
        assert "env" not in s.environments and ".venv" in s.environments
        async with LocalSandbox(s.path) as box:
            seen = await box.run(
                "cat env/prod.env env/secrets/db.txt; grep -r hunter2 . ; ls -a env"
            )
            assert "hunter2" not in seen.stdout + seen.stderr, seen
            assert "prod.env" not in seen.stdout, seen
        assert await s.changes() == []


async def test_a_tracked_env_of_a_subdirectory_workspace_is_hidden_under_too(
    tmp_path: Path, scratch_base: Path
) -> None:
    repo = _repo(tmp_path / "mono", prefix="pkg/")
    async with await ScratchWorkspace.create(
        repo / "pkg", base_dir=scratch_base, strategy="overlay"
    ) as s:
        assert s.strategy == "overlay", s.fallback_reason
        _assert_view(repo, s.path)
        assert await s.changes() == []


async def test_a_worktree_copy_holds_neither_and_links_no_tracked_environment(
    tmp_path: Path, scratch_base: Path
) -> None:
    repo = _repo(tmp_path / "proj")
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="worktree") as s:
        assert not os.path.lexists(s.path / "env/prod.env")
        assert not os.path.lexists(s.path / "env/secrets")
        assert not (s.path / "env").is_symlink()
        assert ".venv" in s.environments and "env" not in s.environments
