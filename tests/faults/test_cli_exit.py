"""Row 2 of issue 15 (CLI): ``driveros agent --review`` stopped by a signal mid-run prints
its result and exits 7 with nothing left behind; after kill -9, ``driveros gc`` (or the next
start) removes what it left."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from driveros.state import list_leases, mounts_under
from driveros.testing import ScriptedModelServer, Turn
from tests.cli.conftest import DRIVEROS, cli_environ, start_cli
from tests.cli.conftest import calc_repo as calc_repo  # the fixtures, for these tests
from tests.cli.conftest import git_repo as git_repo
from tests.review._repo import git

STALL = [Turn(text="never mind", delay_s=600)]
ARGS = ("--task", "stall", "--review", "--review-action", "discard", "--provider", "openai")


def _worktrees(repo: Path) -> list[str]:
    out = git(repo, "worktree", "list", "--porcelain")
    return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("worktree ")]


async def _until(check: Any, what: str) -> None:
    async with asyncio.timeout(60):
        while not check():
            await asyncio.sleep(0.05)
    assert check(), what


@pytest.fixture
def private_tmp(tmp_path: Path) -> Path:
    d = tmp_path / "tmp"
    d.mkdir()
    return d


async def _mid_run(
    repo: Path, env: dict[str, str], fmt: str, model: ScriptedModelServer
) -> asyncio.subprocess.Process:
    """The run started: its scratch copy (a worktree or a mounted view, per the strategy the
    test runs under, tests/faults/conftest.py) is ready and the model has the request."""
    proc = await start_cli(*ARGS, "--format", fmt, env=env, cwd=repo)
    await _until(lambda: len(model.requests) >= 1, "the run's first model request")
    return proc


def _left(repo: Path, tmp: Path) -> tuple[int, int]:
    """(scratch worktrees, mounted views) a run of ``repo`` left."""
    return len(_worktrees(repo)) - 1, len(mounts_under(tmp))


@pytest.mark.parametrize("sig", ["SIGHUP", "SIGQUIT", "SIGTERM", "SIGINT"])
async def test_cli_signal_mid_run_prints_result_and_cleans_up(
    git_repo: Path, private_tmp: Path, sig: str
) -> None:
    async with ScriptedModelServer(STALL) as model:
        env = cli_environ(model) | {"TMPDIR": str(private_tmp)}
        proc = await _mid_run(git_repo, env, "json", model)
        proc.send_signal(getattr(signal, sig))
        async with asyncio.timeout(60):
            out, err = await proc.communicate()
    assert proc.returncode == 7, err.decode()
    result = json.loads(out)
    assert (result["outcome"], result["exit_code"]) == ("canceled", 7)
    assert _worktrees(git_repo) == [str(git_repo)]
    assert await list_leases() == []
    assert _left(git_repo, private_tmp) == (0, 0)
    assert sorted(p.name for p in private_tmp.iterdir()) == []


async def test_cli_signal_mid_run_text_format_has_summary(
    git_repo: Path, private_tmp: Path
) -> None:
    async with ScriptedModelServer(STALL) as model:
        env = cli_environ(model) | {"TMPDIR": str(private_tmp)}
        proc = await _mid_run(git_repo, env, "text", model)
        proc.send_signal(signal.SIGHUP)
        async with asyncio.timeout(60):
            out, _ = await proc.communicate()
    assert proc.returncode == 7
    assert out.decode().splitlines()[-1].startswith("SUMMARY")


async def test_cli_killed_mid_run_then_gc_removes_everything(
    git_repo: Path, private_tmp: Path, scratch_strategy: str
) -> None:
    async with ScriptedModelServer(STALL) as model:
        env = cli_environ(model) | {"TMPDIR": str(private_tmp)}
        proc = await _mid_run(git_repo, env, "json", model)
        proc.send_signal(signal.SIGKILL)
        await proc.communicate()
    pid = proc.pid
    assert _left(git_repo, private_tmp) == ((0, 1) if scratch_strategy == "overlay" else (1, 0))
    kinds = sorted(lease.record.kind for lease in await list_leases())
    assert "scratch" in kinds

    gc = subprocess.run(
        [str(DRIVEROS), "gc", "--format", "json"], env=env, capture_output=True, text=True
    )
    assert gc.returncode == 0, gc.stderr
    report = json.loads(gc.stdout)
    assert sorted(c["kind"] for c in report["removed"]) == kinds
    assert {c["owner_pid"] for c in report["removed"]} == {pid}
    assert {c["reason"] for c in report["removed"]} == {"owner_gone"}
    assert _worktrees(git_repo) == [str(git_repo)]
    assert await list_leases() == []
    assert _left(git_repo, private_tmp) == (0, 0)
    assert sorted(p.name for p in private_tmp.iterdir()) == []

    again = subprocess.run([str(DRIVEROS), "gc"], env=env, capture_output=True, text=True)
    assert again.returncode == 0
    assert again.stdout.startswith("nothing to remove")


async def test_cli_start_collects_what_a_killed_run_left(git_repo: Path, private_tmp: Path) -> None:
    async with ScriptedModelServer(STALL) as model:
        env = cli_environ(model) | {"TMPDIR": str(private_tmp)}
        proc = await _mid_run(git_repo, env, "json", model)
        proc.send_signal(signal.SIGKILL)
        await proc.communicate()
    async with ScriptedModelServer([Turn(text="hello")]) as model:
        env = cli_environ(model) | {"TMPDIR": str(private_tmp)}
        proc = await start_cli("--task", "hi", "--provider", "openai", env=env, cwd=git_repo)
        _, err = await proc.communicate()
    assert proc.returncode in (0, 2), err.decode()
    assert "left by ended processes" in err.decode()
    assert _worktrees(git_repo) == [str(git_repo)]
    assert await list_leases() == []
    assert _left(git_repo, private_tmp) == (0, 0)
    assert sorted(p.name for p in private_tmp.iterdir()) == []


# -- issue 28 row 8: once the result is out, the exit status is the result's exit_code --

ANSWER = [Turn(text="hello")]
AFTER_RESULT_TRIES = 3


def _is_result(line: bytes) -> bool:
    try:
        return bool(json.loads(line).get("type") == "result")
    except ValueError:
        return False


async def _signal_after_result(
    repo: Path, env: dict[str, str], sig: signal.Signals, fmt: str, *args: str
) -> tuple[int, int]:
    """(exit status, the result's exit_code) of a run signalled as its result line appears."""
    proc = await start_cli(
        *args, "--format", fmt, "--provider", "openai", "--no-memory", env=env, cwd=repo
    )
    assert proc.stdout is not None
    last = b""
    try:
        async with asyncio.timeout(120):
            async for line in proc.stdout:
                last = line
                if line.startswith(b"SUMMARY") or _is_result(line):
                    with contextlib.suppress(ProcessLookupError):
                        proc.send_signal(sig)
                    break
            await proc.communicate()
    finally:  # a failure or a cancellation leaves no run behind for the next test
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    assert last.startswith(b"SUMMARY") or _is_result(last), last  # the signal was sent
    if last.startswith(b"SUMMARY"):
        code = int(last.split(b" exit=", 1)[1].split(b" ", 1)[0])
    else:
        code = json.loads(last)["exit_code"]
    return proc.returncode, code


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGINT", "SIGQUIT"])
async def test_cli_signal_right_after_the_result_keeps_its_exit_code(
    git_repo: Path, private_tmp: Path, sig: str
) -> None:
    async with ScriptedModelServer(ANSWER, repeat_last=True) as model:
        env = cli_environ(model) | {"TMPDIR": str(private_tmp), "DRIVEROS_DIAGNOSTICS": "off"}
        at_once = asyncio.Semaphore(3)

        async def one(fmt: str, *args: str) -> tuple[int, int]:
            async with at_once:
                return await _signal_after_result(git_repo, env, getattr(signal, sig), fmt, *args)

        async with asyncio.TaskGroup() as tg:  # a failure cancels and reaps the others
            runs = [
                tg.create_task(one(fmt, "--task", "hi"))
                for fmt in ("json", "ndjson", "text")
                for _ in range(AFTER_RESULT_TRIES)
            ]
            runs.append(tg.create_task(one("json")))  # a usage error's result (no --task)
        seen = [run.result() for run in runs]
    assert seen == [(code, code) for _, code in seen]
    assert await list_leases() == []
