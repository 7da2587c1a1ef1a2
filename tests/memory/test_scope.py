"""Scope keys and the git exclude line, against real git repositories."""

from __future__ import annotations

import shutil
from pathlib import Path

from driveros.config import load_environment
from driveros.memory import (
    default_db_path,
    memory_dir,
    open_memory_store,
    place_store,
    scope_for,
)
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


async def test_new_database_lives_in_the_state_directory(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", remote="https://example.com/org/demo.git")
    env = load_environment(cwd=repo, environ={})
    store = await open_memory_store(repo, env)
    await store.aclose()
    assert store.path == default_db_path("git:example.com/org/demo")
    assert store.path.parent == memory_dir() and store.path.exists()
    assert store.path.name.startswith("example.com_org_demo-")
    assert (store.path.parent.stat().st_mode & 0o777) == 0o700
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert not (repo / ".agent-memory.db").exists()
    # two clones of one repository share it; another repository has its own
    other = make_repo(tmp_path / "other")
    assert default_db_path(await scope_for(other)) != store.path


async def test_a_trusted_workspace_database_is_excluded_from_git_and_recorded(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    env = load_environment(cwd=repo, environ={"DRIVEROS_MEMORY_PATH": "mem.db"}, trusted=True)
    store = await open_memory_store(repo, env)
    await store.aclose()
    assert store.path == repo / "mem.db"
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert "/mem.db*" in (repo / ".git" / "info" / "exclude").read_text()
    assert not (repo / ".gitignore").exists()
    # recorded when created, so it opens again
    store = await open_memory_store(repo, env)
    await store.aclose()


async def test_memory_path_setting_is_relative_to_workspace(tmp_path: Path) -> None:
    env = load_environment(cwd=tmp_path, environ={"DRIVEROS_MEMORY_PATH": "state/mem.db"})
    env = env.model_copy(update={"workspace_trusted": True})
    assert (await place_store(tmp_path, env)).path == tmp_path / "state" / "mem.db"
    env = load_environment(cwd=tmp_path, environ={"DRIVEROS_MEMORY_PATH": "/abs/mem.db"})
    assert (await place_store(tmp_path, env)).path == Path("/abs/mem.db")
    placed = await place_store(tmp_path, None)
    assert placed.path == default_db_path(f"path:{tmp_path.resolve()}")
    assert not placed.in_workspace and placed.notices == ()


async def test_a_memory_path_leading_out_of_the_workspace_is_not_inside(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    env = load_environment(cwd=ws, environ={"DRIVEROS_MEMORY_PATH": "../outside.db"})
    assert not env.workspace_trusted
    placed = await place_store(ws, env)
    assert not placed.in_workspace and placed.path.resolve() == tmp_path / "outside.db"
