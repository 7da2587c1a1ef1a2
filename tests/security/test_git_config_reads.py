"""Issue 13 row 8: how driveros reads a repository's configuration before running git in it:
it fails closed when the listing fails, and one listing serves every call of one check, or of
a scratch view's start, without a planted program running."""

from __future__ import annotations

from pathlib import Path

import pytest

from driveros import GitError
from driveros._git import run_git, run_git_sync
from driveros.approval import ApprovalRequest, PolicyApproval, Tier
from driveros.review import ScratchWorkspace, scratch_strategies
from tests.security._hostile_git import (
    git,
    hostile_repo,
    logging_git,
    make_racy,
    program,
    use_git_without_show_scope,
)


async def test_driveros_git_fails_closed_when_the_config_cannot_be_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A git that cannot list the configuration (older than ``--show-scope``): the call is
    not run unpinned, it fails with git's own message."""
    marker = tmp_path / "PWNED"
    repo = hostile_repo(tmp_path, ("filter.evil.clean",), marker)
    (repo / "notes.txt").write_text("changed\n")
    use_git_without_show_scope(tmp_path, monkeypatch)
    result = await run_git(["add", "-A"], cwd=repo, check=False)
    assert result.returncode == 129 and "show-scope" in result.error
    with pytest.raises(GitError, match="show-scope"):
        await run_git(["add", "-A"], cwd=repo)
    assert not marker.exists()
    assert run_git_sync(["add", "-A"], cwd=repo, check=False).returncode == 129
    assert not marker.exists()


async def test_the_policy_reads_a_repository_configuration_once_per_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check before an auto-allowed git command lists the configuration once and pins
    its other git calls from that listing (not one more listing per call)."""
    repo = hostile_repo(tmp_path, (), tmp_path / "PWNED")
    git(repo, "config", "--unset", "log.showSignature")
    log = logging_git(tmp_path, monkeypatch)
    policy = PolicyApproval(workspace=repo, tier=Tier(sandbox="local"))
    decision = await policy.decide(ApprovalRequest(tool="run", command="git status"))
    assert decision.allowed, decision.reason
    calls = log.read_text().splitlines()
    assert sum("config --list" in call for call in calls) == 1, calls
    assert any("rev-parse --show-toplevel" in call for call in calls), calls


async def test_the_policy_asks_when_git_cannot_list_the_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A git older than ``--show-scope`` (2.26) cannot say what the repository sets: git is
    not auto-allowed there (it was: the failed listing read as "not a repository")."""
    marker = tmp_path / "PWNED"
    repo = hostile_repo(tmp_path, ("diff.external",), marker)
    use_git_without_show_scope(tmp_path, monkeypatch)
    policy = PolicyApproval(workspace=repo, tier=Tier(sandbox="local"))
    decision = await policy.decide(ApprovalRequest(tool="run", command="git diff"))
    assert not decision.allowed
    assert "show-scope" in decision.reason
    assert not marker.exists()


@pytest.mark.skipif(
    scratch_strategies()["overlay"] is not None,
    reason=f"no kernel overlay here: {scratch_strategies()['overlay']}",
)
async def test_a_views_start_reads_the_configuration_once_and_runs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's scratch view, up to its mount (what the run's first request waits for), lists
    the user's configuration once for all its git calls on the repository; those calls,
    pinned from that listing, run no planted program, nor does the baseline recorded later."""
    marker = tmp_path / "PWNED"
    repo = hostile_repo(tmp_path, (), marker)
    make_racy(repo)  # a status must read notes.txt: through the clean filter, unpinned
    for key in ("core.fsmonitor", "filter.evil.clean", "filter.evil.process"):
        git(repo, "config", key, program(marker))
    (repo / "new.txt").write_text("untracked\n")
    (repo / "build.log").write_text("ignored\n")
    (repo / ".gitignore").write_text("*.log\n")
    log = logging_git(tmp_path, monkeypatch)
    base = tmp_path / "scratch"
    base.mkdir()
    scratch = await ScratchWorkspace.create(
        repo, base_dir=base, strategy="overlay", defer_baseline=True
    )
    try:
        assert scratch.strategy == "overlay"
        calls = [c for c in log.read_text().splitlines() if f"-C {repo} " in c]
        assert sum("config --list" in c for c in calls) == 1, calls
        assert sum(" ls-files " in c for c in calls) == 2, calls  # ignored, untracked
        assert not (scratch.path / "build.log").exists()  # the ignored listing was used
        assert not marker.exists()
        await scratch.baseline_recorded()
        (scratch.path / "new.txt").write_text("agent\n")
        assert [(c.path, c.action) for c in await scratch.changes()] == [("new.txt", "modify")]
        assert not marker.exists()
    finally:
        await scratch.aclose()
