"""Scope keys and the git exclude line, against real git repositories."""

from __future__ import annotations

import shutil
from pathlib import Path

from driveros.config import load_environment
from driveros.memory import default_db_path, open_memory_store, scope_for
from driveros.memory._scope import normalize_remote
from tests.memory.conftest import git, make_repo


def test_normalize_remote_strips_credentials_and_suffix() -> None:
    assert normalize_remote("https://user:tok123@GitHub.com/Org/x.git") == "github.com/Org/x"
    assert normalize_remote("git@github.com:Org/x.git") == "github.com/Org/x"
    assert normalize_remote("ssh://git@github.com/Org/x") == "github.com/Org/x"


async def test_scope_prefers_remote_then_root_commit_then_path(tmp_path: Path) -> None:
    with_remote = make_repo(tmp_path / "a", remote="https://u:secret@example.com/org/demo.git")
    assert await scope_for(with_remote) == "git:example.com/org/demo"
    assert await scope_for(with_remote / ".") == "git:example.com/org/demo"

    local = make_repo(tmp_path / "b")
    root = git(local, "rev-list", "--max-parents=0", "HEAD")
    assert await scope_for(local) == f"commit:{root}"
    moved = tmp_path / "moved"
    shutil.move(local, moved)
    assert await scope_for(moved) == f"commit:{root}"

    plain = tmp_path / "plain"
    plain.mkdir()
    assert await scope_for(plain) == f"path:{plain.resolve()}"


async def test_new_database_is_excluded_from_git(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    env = load_environment(cwd=tmp_path, environ={})
    store = await open_memory_store(repo, env)
    await store.aclose()
    assert (repo / ".agent-memory.db").exists()
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert "/.agent-memory.db*" in (repo / ".git" / "info" / "exclude").read_text()
    tracked = (repo / ".gitignore").exists()
    assert not tracked


def test_memory_path_setting_is_relative_to_workspace(tmp_path: Path) -> None:
    env = load_environment(cwd=tmp_path, environ={"DRIVEROS_MEMORY_PATH": "state/mem.db"})
    assert default_db_path(tmp_path, env) == tmp_path / "state" / "mem.db"
    env = load_environment(cwd=tmp_path, environ={"DRIVEROS_MEMORY_PATH": "/abs/mem.db"})
    assert default_db_path(tmp_path, env) == Path("/abs/mem.db")
    assert default_db_path(tmp_path, None) == tmp_path / ".agent-memory.db"
