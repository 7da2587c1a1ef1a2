"""Issue 13 row 6: the repository uses ``core.hooksPath=.husky`` (or pre-commit, lefthook);
the model edits the hook; ``--review-action commit`` ran the agent-written hook as the user.

Now ``commit`` refuses (nothing written) whenever a selected change touches a hook path or a
git config file, and driveros' own git calls never run hooks or fsmonitor; only the user's
own, unchanged hooks run on driveros' commit."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from driveros.review import FileChange, HookChangeError, ScratchWorkspace
from driveros.review._hooks import static_hook_reason
from tests.review._repo import git, make_repo, tree


def _hook(marker: Path) -> str:
    return f"#!/bin/sh\necho ran >> {marker}\n"


def _planted(tmp_path: Path) -> Path:
    return tmp_path / "PWNED"


def _executable(path: Path) -> None:
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def husky_repo(tmp_path: Path) -> Path:
    repo = make_repo(
        tmp_path / "repo",
        {
            "calc.py": "def add(a, b):\n    return a - b\n",
            ".husky/pre-commit": "#!/bin/sh\nexit 0\n",
            "tools/hooks/commit-msg": "#!/bin/sh\nexit 0\n",
            "package.json": '{"name": "x", "lint-staged": {"*.py": "ruff"}}\n',
            ".gitconfig": "[user]\n\tname = t\n",
        },
    )
    _executable(repo / ".husky/pre-commit")
    git(repo, "config", "core.hooksPath", ".husky")
    return repo


# Each: (core.hooksPath or None, include .gitconfig?, the path the model writes).
ATTACKS = [
    (".husky", False, ".husky/pre-commit"),
    (".husky", False, ".husky/_/husky.sh"),
    (".githooks", False, ".githooks/pre-commit"),
    ("tools/hooks", False, "tools/hooks/commit-msg"),
    ("tools/hooks", False, "tools/hooks/pre-commit"),
    (None, False, ".pre-commit-config.yaml"),
    (None, False, "lefthook.yml"),
    (None, False, ".lefthook.yml"),
    (None, False, ".lefthook/pre-commit/check.sh"),
    (None, False, ".HUSKY/pre-commit"),
    (None, False, "package.json"),
    (None, True, ".gitconfig"),
]


@pytest.mark.parametrize(("hooks_path", "include", "written"), ATTACKS)
async def test_commit_refuses_a_proposal_that_changes_a_hook_path(
    husky_repo: Path, tmp_path: Path, hooks_path: str | None, include: bool, written: str
) -> None:
    marker = _planted(tmp_path)
    if hooks_path is None:
        git(husky_repo, "config", "--unset", "core.hooksPath")
    else:
        git(husky_repo, "config", "core.hooksPath", hooks_path)
    if include:
        git(husky_repo, "config", "include.path", "../.gitconfig")
    head = git(husky_repo, "rev-parse", "HEAD")
    before = tree(husky_repo)
    async with await ScratchWorkspace.create(husky_repo) as scratch:
        target = scratch.path / written
        target.parent.mkdir(parents=True, exist_ok=True)
        if written == "package.json":
            target.write_text('{"name": "x", "lint-staged": {"*.py": "sh -c pwn"}}\n')
        elif written == ".gitconfig":
            target.write_text(f"[core]\n\tfsmonitor = {marker}.sh\n\thooksPath = evil\n")
        else:
            target.write_text(_hook(marker))
            _executable(target)
        (scratch.path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        with pytest.raises(HookChangeError) as caught:
            await scratch.commit("agent: fix add")
        assert written in caught.value.paths
        assert "by hand" in str(caught.value)
        # The clean file alone may still be committed, with the user's own hooks.
        applied = await scratch.commit("agent: fix add", paths=["calc.py"])
        assert applied.commit is not None
    assert not marker.exists()
    assert git(husky_repo, "rev-parse", "HEAD^") == head
    after = tree(husky_repo)
    assert after.pop("calc.py").endswith(b"a + b\n")
    before.pop("calc.py")
    assert after == before  # the hook path was never written


async def test_users_own_unchanged_hooks_run_on_driveros_commit(
    husky_repo: Path, tmp_path: Path
) -> None:
    marker = _planted(tmp_path)
    (husky_repo / ".husky/pre-commit").write_text(_hook(marker))
    git(husky_repo, "commit", "-qam", "user's own hook")  # runs it once, as the user does
    marker.unlink()
    async with await ScratchWorkspace.create(husky_repo) as scratch:
        (scratch.path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        applied = await scratch.commit("agent: fix add")
    assert applied.commit is not None
    assert marker.read_text() == "ran\n"


async def test_driveros_git_calls_run_no_hook_and_no_fsmonitor(
    husky_repo: Path, tmp_path: Path
) -> None:
    """Scratch creation (worktree add: post-checkout), diffing, applying and the commit's own
    add/status calls run neither the user's hooks nor a configured fsmonitor."""
    marker = _planted(tmp_path)
    for name in ("post-checkout", "post-index-change", "reference-transaction"):
        hook = husky_repo / ".husky" / name
        hook.write_text(_hook(marker))
        _executable(hook)
    monitor = tmp_path / "fsmonitor.sh"
    monitor.write_text(f"#!/bin/sh\necho fsmonitor >> {marker}\n")
    _executable(monitor)
    git(husky_repo, "config", "core.fsmonitor", str(monitor))
    async with await ScratchWorkspace.create(husky_repo) as scratch:
        (scratch.path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        await scratch.changes()
        await scratch.apply()
    assert not marker.exists()


@pytest.mark.parametrize(
    "path",
    [
        ".git/hooks/pre-commit",
        "sub/.GIT/config",
        "a/.git./x",
        ".g\u200cit/hooks/x",
        "web/.husky/pre-push",
        "x/.githooks/y",
        ".pre-commit-config.yml",
        ".lefthook-local.yaml",
        "lefthook.toml",
        ".huskyrc.json",
        "commitlint.config.js",
        ".lintstagedrc",
        ".simple-git-hooks.json",
    ],
)
def test_hook_paths_by_name(path: str) -> None:
    change = FileChange(path=path, action="modify", before="", after="x")
    assert static_hook_reason(change, path) is not None


def test_ordinary_paths_are_not_hook_paths() -> None:
    for path in ("calc.py", "docs/husky.md", "git/hooks.py", "package.json"):
        change = FileChange(path=path, action="modify", before="{}", after='{"a": 1}')
        assert static_hook_reason(change, path) is None, path


async def test_commit_refuses_repointing_a_symlinked_hooks_directory(
    husky_repo: Path, tmp_path: Path
) -> None:
    """``core.hooksPath=hooks`` where ``hooks`` is a committed symlink: the model points the
    link at a directory of its own."""
    marker = _planted(tmp_path)
    (husky_repo / "real-hooks").mkdir()
    (husky_repo / "hooks").symlink_to("real-hooks")
    git(husky_repo, "add", "-A")
    git(husky_repo, "commit", "-qm", "hooks dir")
    git(husky_repo, "config", "core.hooksPath", "hooks")
    async with await ScratchWorkspace.create(husky_repo) as scratch:
        evil = scratch.path / "evil"
        evil.mkdir()
        (evil / "pre-commit").write_text(_hook(marker))
        _executable(evil / "pre-commit")
        (scratch.path / "hooks").unlink()
        (scratch.path / "hooks").symlink_to("evil")
        with pytest.raises(HookChangeError) as caught:
            await scratch.commit("agent: tidy")
        assert "hooks" in caught.value.paths
    assert not marker.exists()
    assert (husky_repo / "hooks").readlink() == Path("real-hooks")
