"""The one git runner (driveros._git): hooks only when asked, one GitError, async and sync."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from driveros import ConfigError, GitError, GitNotFoundError
from driveros._git import GitRepo, read_config, run_git, run_git_sync
from driveros.dogfood import GitError as DogfoodGitError
from driveros.review import GitError as ReviewGitError
from driveros.review import GitNotFoundError as ReviewGitNotFoundError


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (
        ["init", "-q"],
        ["config", "user.name", "t"],
        ["config", "user.email", "t@localhost"],
    ):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text('#!/bin/sh\necho ran > "$(git rev-parse --git-dir)/../hook-ran"\n')
    hook.chmod(0o755)
    return repo


def test_git_one_error_class_everywhere() -> None:
    assert DogfoodGitError is GitError is ReviewGitError
    assert ReviewGitNotFoundError is GitNotFoundError
    assert issubclass(GitNotFoundError, GitError)
    assert issubclass(GitNotFoundError, ConfigError)


async def test_git_hooks_run_only_when_the_user_hooks_are_asked_for(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "a.txt").write_text("a\n")
    await run_git(["add", "a.txt"], cwd=repo)
    await run_git(["commit", "-q", "-m", "no hooks"], cwd=repo)
    assert not (repo / "hook-ran").exists()
    (repo / "b.txt").write_text("b\n")
    await run_git(["add", "b.txt"], cwd=repo)
    await run_git(["commit", "-q", "-m", "user hooks"], cwd=repo, hooks="user")
    assert (repo / "hook-ran").read_text() == "ran\n"


async def test_git_failure_is_git_error_with_context(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="rev-parse") as info:
        await run_git(["rev-parse", "--verify", "-q", "nope"], cwd=tmp_path)
    assert info.value.context["returncode"] != 0
    done = await run_git(["rev-parse", "--verify", "-q", "nope"], cwd=tmp_path, check=False)
    assert done.returncode != 0


def test_git_sync_form_same_rules(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "a.txt").write_text("a\n")
    run_git_sync(["add", "a.txt"], cwd=repo)
    run_git_sync(["commit", "-q", "-m", "sync"], cwd=repo)
    assert not (repo / "hook-ran").exists()
    assert run_git_sync(["log", "-1", "--format=%s"], cwd=repo).text == "sync\n"
    with pytest.raises(GitError):
        run_git_sync(["rev-parse", "--verify", "-q", "nope"], cwd=repo)


async def test_git_repo_names_the_private_repository_and_its_index(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_text("a\n")
    git_dir = tmp_path / "private.git"
    await run_git(["init", "--bare", "-q", str(git_dir)], cwd=tmp_path, repo=GitRepo(scratch=True))
    index = tmp_path / "other-index"
    repo = GitRepo(git_dir=git_dir, work_tree=tree, index_file=index, scratch=True)
    await run_git(["add", "-A"], cwd=tree, repo=repo)
    assert index.is_file()  # the other index took the file, the repository's own did not
    assert not (git_dir / "index").exists()
    listed = await run_git(["ls-files"], cwd=tree, repo=repo)
    assert listed.text == "a.txt\n"
    assert not (tree / ".git").exists()


async def test_git_repo_a_shared_listing_is_the_user_repositorys(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    listed = await read_config(repo)
    top = await run_git(["rev-parse", "--show-toplevel"], cwd=repo, repo=GitRepo(config=listed))
    assert Path(top.text.strip()) == repo.resolve()
    assert run_git_sync(["rev-parse", "--git-dir"], cwd=repo, repo=GitRepo(config=listed)).text
    with pytest.raises(ValueError, match="scratch"):
        GitRepo(scratch=True, config=listed)


def test_git_not_on_path_is_git_not_found(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GitNotFoundError):
        run_git_sync(["status"], cwd=tmp_path)
