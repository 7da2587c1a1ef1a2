"""execute_run in review mode: the path the language server takes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.review._repo import make_repo
from tests.sandbox.conftest import require_docker

from driveros.agent import Event
from driveros.config import load_environment
from driveros.review import ScratchWorkspace
from driveros.runs import DOCKER_GIT_DIR, RunSpec, docker_git, execute_run
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from .conftest import environ_for, run_scripted

CALC = "def add(a, b):\n    return a - b\n"
EDIT = ToolCallSpec("edit_file", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})


async def test_run_review_mode_proposes_changes_without_touching_the_workspace(
    calc_repo: Path,
) -> None:
    turns = [
        Turn(tool_calls=[EDIT]),
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})]),
        Turn(text="Fixed add()."),
    ]
    out = await run_scripted(turns, calc_repo, review=True)
    report = out.report
    assert report.scratch is not None
    try:
        assert (calc_repo / "calc.py").read_text().endswith("a - b\n")
        assert [c.path for c in report.changes] == ["calc.py"]
        assert report.changes[0].after is not None and "a + b" in report.changes[0].after
        (proposal,) = out.of("proposal")
        assert proposal.rationale == "Fixed add()."
        assert "+    return a + b" in proposal.files[0].diff
        assert out.types[-2:] == ["proposal", "result"]
        await report.scratch.apply()
        assert (calc_repo / "calc.py").read_text().endswith("a + b\n")
    finally:
        await report.scratch.aclose()


async def test_run_overlays_are_what_the_agent_reads(calc_repo: Path) -> None:
    overlay = "def add(a, b):\n    return b + a  # unsaved buffer\n"
    turns = [Turn(tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})]), Turn(text="ok")]
    out = await run_scripted(turns, calc_repo, review=True, overlays={"calc.py": overlay})
    assert out.report.scratch is not None
    await out.report.scratch.aclose()
    assert out.of("tool_result")[0].output == overlay
    assert (calc_repo / "calc.py").read_text().endswith("a - b\n")


async def test_run_overlays_without_review_are_a_setup_error(calc_repo: Path) -> None:
    out = await run_scripted([Turn(text="x")], calc_repo, overlays={"calc.py": "x = 1\n"})
    assert (out.report.result.outcome, out.report.result.exit_code) == ("setup_error", 1)
    assert out.server.requests == []


def _commit_all(repo: Path) -> None:
    for args in (["init", "-q", "-b", "main"], ["add", "-A"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "i"],
        check=True,
    )


def _project_with_venv(tmp_path: Path) -> Path:
    """A git project whose test imports ``envonly``, a module only its ``.venv`` provides."""
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / ".gitignore").write_text(".venv/\n__pycache__/\n")
    (repo / "calc.py").write_text(CALC)
    (repo / "test_calc.py").write_text(
        "import envonly\nfrom calc import add\n\n\n"
        "def test_add():\n    assert envonly.TAG == 'venv'\n    assert add(2, 3) == 5\n"
    )
    venv = repo / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site,) = venv.glob("lib/python3*/site-packages")
    (site / "envonly.py").write_text("TAG = 'venv'\n")
    # pytest itself comes from the test runner's environment, as a project's own would.
    (site / "runner.pth").write_text(f"{sysconfig.get_paths()['purelib']}\n")
    _commit_all(repo)
    return repo


async def test_run_review_mode_uses_the_projects_venv(tmp_path: Path) -> None:
    repo = _project_with_venv(tmp_path)
    venv_before = sorted(
        p.name for p in (repo / ".venv").rglob("*") if "__pycache__" not in p.parts
    )
    pytest_cmd = ToolCallSpec(
        "run", {"command": ".venv/bin/python -m pytest -q -p no:cacheprovider"}
    )
    turns = [
        Turn(tool_calls=[pytest_cmd]),
        Turn(tool_calls=[EDIT]),
        Turn(tool_calls=[pytest_cmd]),
        Turn(text="Fixed add(); the project's tests pass."),
    ]
    out = await run_scripted(turns, repo, review=True)
    report = out.report
    assert report.scratch is not None
    try:
        assert report.scratch.environments == (".venv",)
        first, _edit, second = (r.output for r in out.of("tool_result"))
        assert "ModuleNotFoundError" not in first and "1 failed" in first
        assert "1 passed" in second
        assert [c.path for c in report.changes] == ["calc.py"]
        (proposal,) = out.of("proposal")
        assert [f.path for f in proposal.files] == ["calc.py"]
        assert (repo / "calc.py").read_text() == CALC
    finally:
        await report.scratch.aclose()
    assert (repo / ".venv").is_dir() and not (repo / ".venv").is_symlink()
    after = sorted(p.name for p in (repo / ".venv").rglob("*") if "__pycache__" not in p.parts)
    assert after == venv_before


def _calc_git_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "gitproj"
    repo.mkdir()
    (repo / "calc.py").write_text(CALC)
    (repo / "README.md").write_text("# calc\n")
    _commit_all(repo)
    (repo / "README.md").write_text("# calc (user's uncommitted edit)\n")
    return repo


async def test_docker_git_mounts_only_for_trusted_review_runs(tmp_path: Path) -> None:
    repo = _calc_git_repo(tmp_path)
    async with await ScratchWorkspace.create(repo, strategy="worktree") as scratch:
        trusted = RunSpec(task="t", workspace=repo, sandbox="docker", review=True)
        mounts, env = docker_git(trusted, scratch)
        assert mounts == {str((repo / ".git").resolve()): DOCKER_GIT_DIR}
        assert env["GIT_WORK_TREE"] == "/workspace"
        assert env["GIT_DIR"].startswith(f"{DOCKER_GIT_DIR}/worktrees/")
        untrusted = trusted.model_copy(update={"untrusted": True})
        assert docker_git(untrusted, scratch) == ({}, {})
    assert docker_git(trusted, None) == ({}, {})


@pytest.mark.docker
async def test_run_docker_review_git_status_and_diff_work(tmp_path: Path) -> None:
    require_docker()
    repo = _calc_git_repo(tmp_path)
    git_cmd = ToolCallSpec("run", {"command": "git status --short && git diff"})
    turns = [Turn(tool_calls=[EDIT]), Turn(tool_calls=[git_cmd]), Turn(text="done")]
    out = await run_scripted(turns, repo, review=True, sandbox="docker")
    report = out.report
    assert report.result.outcome != "setup_error", report.result.error
    assert report.scratch is not None
    try:
        _edit, shown = (r.output for r in out.of("tool_result"))
        assert "fatal" not in shown, shown
        assert " M README.md" in shown and " M calc.py" in shown
        assert "+    return a + b" in shown and "+# calc (user's uncommitted edit)" in shown
        assert [c.path for c in report.changes] == ["calc.py"]
    finally:
        await report.scratch.aclose()
    assert (repo / "calc.py").read_text() == CALC


@pytest.mark.docker
async def test_run_docker_review_on_an_overlay_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A docker review run mounts the copy-on-write view when it can (runc, a workspace not
    owned by root), says so in run_started, and proposes exactly what the container changed."""
    import os

    from driveros.review import scratch_strategies

    require_docker()
    if os.geteuid() != 0 or scratch_strategies()["overlay"] is not None:
        pytest.skip("needs root: a kernel overlay and a repository owned by another uid")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[safe]\n\tdirectory = *\n")  # root runs git on it
    monkeypatch.setenv("HOME", str(home))
    repo = _calc_git_repo(tmp_path)
    subprocess.run(["chown", "-R", "65532:65532", str(repo)], check=True)
    shell = ToolCallSpec("run", {"command": "echo '# agent' >> README.md && git status --short"})
    turns = [Turn(tool_calls=[EDIT]), Turn(tool_calls=[shell]), Turn(text="done")]
    out = await run_scripted(turns, repo, review=True, sandbox="docker")
    report = out.report
    assert report.result.outcome != "setup_error", report.result.error
    assert report.scratch is not None
    try:
        [started] = out.of("run_started")
        assert started.scratch == "overlay", getattr(started, "scratch_fallback", "")
        _edit, shown = (r.output for r in out.of("tool_result"))
        assert " M README.md" in shown and " M calc.py" in shown, shown
        assert sorted(c.path for c in report.changes) == ["README.md", "calc.py"]
    finally:
        await report.scratch.aclose()
    assert (repo / "calc.py").read_text() == CALC


def _held_walk(
    monkeypatch: pytest.MonkeyPatch, scratch_started: threading.Event
) -> tuple[threading.Event, list[bool]]:
    """Make the run's .env walk wait (in its thread) until ``release`` is set, and record
    whether the scratch copy was being made while it waited."""
    from driveros.runs import _sink

    release = threading.Event()
    saw_scratch: list[bool] = []
    real = _sink.dotenv_assignments

    def walk(root: Path, *, recursive: bool = False) -> list[tuple[str, str]]:
        saw_scratch.append(scratch_started.wait(30))
        release.wait(30)
        return real(root, recursive=recursive)

    monkeypatch.setattr(_sink, "dotenv_assignments", walk)
    return release, saw_scratch


def _watch_scratch(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    started = threading.Event()
    real = ScratchWorkspace.create.__func__  # type: ignore[attr-defined]

    async def create(cls: type[ScratchWorkspace], *args: Any, **kwargs: Any) -> ScratchWorkspace:
        started.set()
        return await real(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(ScratchWorkspace, "create", classmethod(create))
    return started


async def test_the_env_walk_runs_while_the_scratch_copy_is_made(
    calc_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The walk reads every .env of the workspace (a whole-tree walk, ~0.15 s at 100k files):
    # made one after the other, it added to every run's start.
    started = _watch_scratch(monkeypatch)
    release, saw_scratch = _held_walk(monkeypatch, started)
    release.set()
    out = await run_scripted([Turn(text="done")], calc_repo, review=True)
    assert out.report.scratch is not None
    await out.report.scratch.aclose()
    assert saw_scratch == [True]
    assert out.report.result.outcome == "unverified"  # answered without a check to prove it


async def test_a_run_canceled_before_the_walk_ends_still_reports_a_masked_result(
    calc_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "dotenv-value-0123456789abcdef"
    (calc_repo / ".env").write_text(f"DEPLOY_TOKEN={token}\n")
    started = _watch_scratch(monkeypatch)
    release, _ = _held_walk(monkeypatch, started)
    events: list[Event] = []

    async def on_event(event: Event) -> None:
        events.append(event)

    async with ScriptedModelServer([Turn(text="done")]) as server:
        env = load_environment(cwd=calc_repo, environ=environ_for(server, "openai"))
        spec = RunSpec(task=f"use {token}", workspace=calc_repo, review=True, diagnostics=False)
        run = asyncio.ensure_future(execute_run(spec, env=env, on_event=on_event))
        await asyncio.to_thread(started.wait, 30)
        run.cancel()
        await asyncio.sleep(0)
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await run
    assert [e.type for e in events][-1] == "result"
    assert events[-1].outcome == "canceled"  # type: ignore[union-attr]
    assert server.requests == []
    text = "".join(e.model_dump_json() for e in events)
    assert token not in text


async def test_the_agent_acts_only_once_the_baseline_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run's view is returned before its baseline is recorded, and its first request does not
    # wait for it; its tools do. Here the baseline waits for the first request: the agent's
    # edit of the editor's buffer (which the baseline adds from the view) must not enter it.
    import driveros.review._snapshot_view as snapshot

    real = snapshot.user_status
    servers: list[ScriptedModelServer] = []
    asked_before_the_baseline: list[bool] = []

    async def slow_status(*args: Any, **kwargs: Any) -> Any:
        # Held until the model has the first request (10 s at most: a first request that
        # waited for the baseline would never come).
        for _ in range(200):
            if servers and servers[0].requests:
                break
            await asyncio.sleep(0.05)
        asked_before_the_baseline.append(len(servers[0].requests) == 1)
        return await real(*args, **kwargs)

    monkeypatch.setattr(snapshot, "user_status", slow_status)
    calc_repo = make_repo(tmp_path / "repo", {"calc.py": CALC})  # a view's baseline waits
    overlay = "def add(a, b):\n    return a * b  # unsaved buffer\n"
    edit = ToolCallSpec(
        "edit_file", {"path": "calc.py", "old_string": "a * b", "new_string": "a + b"}
    )
    async with ScriptedModelServer([Turn(tool_calls=[edit]), Turn(text="Fixed.")]) as server:
        servers.append(server)
        env = load_environment(cwd=calc_repo, environ=environ_for(server, "openai"))
        spec = RunSpec(
            task="fix",
            workspace=calc_repo,
            review=True,
            diagnostics=False,
            overlays={"calc.py": overlay},
        )

        async def on_event(event: Event) -> None:
            pass

        report = await execute_run(spec, env=env, on_event=on_event)
    assert report.scratch is not None
    await report.scratch.aclose()
    assert asked_before_the_baseline == [True]
    assert [c.path for c in report.changes] == ["calc.py"]
    assert "-    return a * b  # unsaved buffer\n+    return a + b" in report.changes[0].diff
