"""``git`` inside a writable added folder's review copy (``--add-dir DIR:rw --review``) when
that copy is a git worktree (the local tier's fallback, the docker tier on a root-owned
folder): it answers for the copy, read-only, as in the workspace's own worktree; the user's
repository cannot be written through it, and an untrusted run does not see it at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.review._repo import git, make_repo

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from .conftest import CliRun, run_cli
from .test_agent_docker import docker_ready as docker_ready  # the fixture
from .test_runs_cli import runs

LIB = "def helper():\n    return 1\n"
#: The local tier's worktree fallback, or the docker tier (a root-owned folder: a worktree).
TIERS = [
    pytest.param((), id="local"),
    pytest.param(("--sandbox", "docker"), id="docker", marks=pytest.mark.docker),
]


def _other(tmp_path: Path) -> Path:
    """The added folder: a repository of its own, committed and clean."""
    return make_repo(tmp_path / "other", {"lib.py": LIB, "notes.txt": "note\n"})


def _run(command: str) -> ToolCallSpec:
    return ToolCallSpec("run", {"command": command})


async def _agent(
    turns: list[Turn],
    other: Path,
    cwd: Path,
    tier: tuple[str, ...],
    *flags: str,
    action: str = "discard",
) -> CliRun:
    """``driveros agent --review`` with ``other`` added writable, its copy a worktree."""
    async with ScriptedModelServer(turns) as server:
        run = await run_cli(
            *("--task", "look at the other folder's git", "--add-dir", f"{other}:rw"),
            *("--review", "--review-action", action, "--format", "ndjson", *tier, *flags),
            server=server,
            cwd=cwd,
            extra_env={"DRIVEROS_SCRATCH_STRATEGY": "worktree"},
        )
    assert run.code == 0, (run.stderr, run.stdout[-3000:])
    return run


def _outputs(run: CliRun) -> list[str]:
    return [str(r["output"]) for r in run.events("tool_result")]


def _repo_state(repo: Path) -> dict[str, Any]:
    """What a command must never change in the user's repository."""
    dot = repo / ".git"
    return {
        "head": git(repo, "rev-parse", "HEAD"),
        "refs": git(repo, "for-each-ref"),
        "status": git(repo, "status", "--porcelain"),
        "config": (dot / "config").read_text(),
        "hooks": sorted(p.name for p in (dot / "hooks").iterdir()),
        "files": {p.name: p.read_text() for p in repo.iterdir() if p.is_file()},
    }


@pytest.mark.parametrize("tier", TIERS)
async def test_git_in_an_rw_folders_worktree_copy_shows_the_runs_edit(
    calc_repo: Path, tmp_path: Path, tier: tuple[str, ...], request: pytest.FixtureRequest
) -> None:
    if tier:
        request.getfixturevalue("docker_ready")
    await _git_in_both(calc_repo, tmp_path, tier)


@pytest.mark.parametrize("tier", TIERS)
async def test_git_in_the_workspace_and_an_rw_folder_each_answer_for_itself(
    git_repo: Path, tmp_path: Path, tier: tuple[str, ...], request: pytest.FixtureRequest
) -> None:
    """The workspace is a repository too, its copy a worktree (docker: no ``GIT_DIR`` that
    would name it in the folder too)."""
    if tier:
        request.getfixturevalue("docker_ready")
    own = await _git_in_both(git_repo, tmp_path, tier)
    assert "initial" in own.splitlines() and "lib.py" not in own, own


async def _git_in_both(workspace: Path, tmp_path: Path, tier: tuple[str, ...]) -> str:
    """Edit the added folder, ask its git, then the workspace's (whose output is returned)."""
    other = _other(tmp_path)
    turns = [
        Turn(
            tool_calls=[
                ToolCallSpec(
                    "edit_file",
                    {"path": f"{other}/lib.py", "old_string": "return 1", "new_string": "return 2"},
                )
            ]
        ),
        Turn(tool_calls=[_run(f"git -C {other} status --porcelain")]),
        Turn(tool_calls=[_run(f"git -C {other} diff")]),
        Turn(tool_calls=[_run(f"cd {other} && git log --format=%s")]),
        Turn(tool_calls=[_run("git status --porcelain && git log --format=%s")]),
        Turn(text="seen"),
    ]
    run = await _agent(turns, other, workspace, tier)
    _, status, diff, log, own = _outputs(run)
    assert " M lib.py" in status.splitlines(), status
    assert "fatal" not in status and "notes.txt" not in status, status
    assert "diff --git a/lib.py b/lib.py" in diff, diff
    assert "-    return 1" in diff and "+    return 2" in diff, diff
    assert "init" in log.splitlines(), log
    # The user's folder: untouched (discarded), clean.
    assert (other / "lib.py").read_text() == LIB
    assert git(other, "status", "--porcelain") == ""
    return own


@pytest.mark.parametrize("tier", TIERS)
async def test_git_in_an_rw_folders_copy_cannot_write_the_users_repository(
    calc_repo: Path, tmp_path: Path, tier: tuple[str, ...], request: pytest.FixtureRequest
) -> None:
    if tier:
        request.getfixturevalue("docker_ready")
    other = _other(tmp_path)
    (other / ".git" / "hooks" / "keep").write_text("the user's own\n")
    before = _repo_state(other)
    # Where the copy's git directory is, as commands see it (through its .git link).
    gitdir = f"$(sed -n 's/^gitdir: //p' {other}/.git)"
    attacks = [
        f"echo '#!/bin/sh' > {other}/.git/hooks/x",
        f"echo x > {gitdir}/../../hooks/x",
        f"echo x > {gitdir}/HEAD",
        f"echo '[core]' >> {gitdir}/../../config",
        f"echo 'gitdir: /tmp' > {other}/.git",
        f"echo changed > {other}/lib.py && git -C {other} commit -qam sneaky",
        f"git -C {other} config core.hooksPath /tmp",
        f"git -C {other} branch planted",
        f"git -C {other} update-ref refs/heads/main HEAD~0",
    ]
    turns = [
        *(Turn(tool_calls=[_run(f"{cmd}; echo exit=$?")]) for cmd in attacks),
        Turn(tool_calls=[_run(f"git -C {other} status --porcelain")]),
        Turn(text="tried"),
    ]
    run = await _agent(turns, other, calc_repo, tier)
    *tried, status = _outputs(run)
    for cmd, out in zip(attacks, tried, strict=True):
        assert "exit=0" not in out, (cmd, out)
    # git still answers for the copy: the edit the commit could not record is there.
    assert " M lib.py" in status.splitlines(), status
    assert _repo_state(other) == before


async def test_untrusted_run_sees_no_git_directory_of_an_rw_folder(
    calc_repo: Path, tmp_path: Path
) -> None:
    other = _other(tmp_path)
    turns = [
        Turn(tool_calls=[_run(f"git -C {other} status --porcelain; echo exit=$?")]),
        Turn(text="none"),
    ]
    run = await _agent(turns, other, calc_repo, (), "--untrusted")
    (status,) = _outputs(run)
    assert "not a git repository" in status and "exit=0" not in status, status


async def test_held_run_with_git_in_an_rw_folder_applies_later(
    calc_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DRIVEROS_SCRATCH_STRATEGY", "worktree")
    other = _other(tmp_path)
    turns = [
        Turn(tool_calls=[_run(f"sed -i s/1/2/ {other}/lib.py && git -C {other} diff --stat")]),
        Turn(text="held"),
    ]
    run = await _agent(turns, other, calc_repo, (), action="hold")
    (changed,) = _outputs(run)
    assert "lib.py | 2 +-" in changed, changed
    applied = await runs("apply", str(run.lines()[-1]["run_id"]), cwd=calc_repo)
    assert applied.code == 0, applied.stderr
    assert (other / "lib.py").read_text() == "def helper():\n    return 2\n"
    assert git(other, "status", "--porcelain") == " M lib.py\n"


async def test_git_in_an_rw_folders_copy_runs_no_program_its_config_names(
    calc_repo: Path, tmp_path: Path
) -> None:
    """The folder's repository sets ``diff.external``: the local sandbox pins it as it pins
    the workspace repository's (docs/security.md), so ``git diff`` there runs nothing."""
    other = _other(tmp_path)
    git(other, "config", "diff.external", "echo PLANTED-PROGRAM-RAN")
    turns = [
        Turn(tool_calls=[_run(f"sed -i s/1/2/ {other}/lib.py; git -C {other} diff")]),
        Turn(text="diffed"),
    ]
    run = await _agent(turns, other, calc_repo, ())
    (diff,) = _outputs(run)
    assert "PLANTED-PROGRAM-RAN" not in diff, diff
    assert "--no-ext-diff" in diff, diff
