"""``driveros agent`` as a subprocess: formats, exit codes, signals, review, redaction."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
from tests._scripted import FIX_CALC, leaking_turns

from driveros.agent import EVENT_TYPES, event_adapter
from driveros.testing import ScriptedError, ScriptedModelServer, ToolCallSpec, Turn

from .conftest import DRIVEROS, SECRET, cli_environ, run_cli, start_cli

LOOK = Turn(tool_calls=[ToolCallSpec("list_files", {})])
FIX_TURNS = [
    Turn(
        thinking="Read the code first.", tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})]
    ),
    Turn(tool_calls=[FIX_CALC]),
    Turn(tool_calls=[ToolCallSpec("run", {"command": "python -m pytest -q"})]),
    Turn(text="Fixed add(); the test passes."),
]


async def test_cli_fixes_the_fixture_repo_over_anthropic_text_format(calc_repo: Path) -> None:
    async with ScriptedModelServer(FIX_TURNS) as server:
        run = await run_cli(
            "--task",
            "make the tests pass",
            server=server,
            cwd=calc_repo,
            wire="anthropic",
            extra_env={"DRIVEROS_DIAGNOSTICS": "on"},
        )
    assert run.code == 0, run.stderr
    assert "diagnostics:" in run.stderr  # the feed ran after the edit
    assert (calc_repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    lines = run.stdout.splitlines()
    assert lines[0] == "Fixed add(); the test passes."
    assert lines[-1].startswith("SUMMARY outcome=answered exit=0 verified=yes turns=4 ")
    assert "── turn 1" in run.stderr and "→ edit_file" in run.stderr
    assert "SUMMARY" not in run.stderr


async def test_cli_json_format_prints_one_result_object(calc_repo: Path) -> None:
    async with ScriptedModelServer([LOOK, Turn(text="Two files.")]) as server:
        run = await run_cli("--task", "t", "--format", "json", server=server, cwd=calc_repo)
    assert run.code == 0
    result = run.json()
    assert {
        k: result[k] for k in ("type", "outcome", "exit_code", "answer", "verified", "turns")
    } == {
        "type": "result",
        "outcome": "answered",
        "exit_code": 0,
        "answer": "Two files.",
        "verified": True,
        "turns": 2,
    }
    assert result["usage"]["total_tokens"] == 240 and result["duration_ms"] > 0
    assert "── turn 1" in run.stderr


async def test_cli_ndjson_prints_every_event_and_ends_with_result(calc_repo: Path) -> None:
    async with ScriptedModelServer([LOOK, Turn(text="ok")]) as server:
        run = await run_cli("--task", "t", "--format", "ndjson", server=server, cwd=calc_repo)
    assert run.code == 0
    adapter = event_adapter()
    events = [adapter.validate_json(line) for line in run.stdout.splitlines()]
    types = [e.type for e in events]
    assert types[0] == "run_started" and types[-1] == "result"
    assert types.count("result") == 1
    assert set(types) <= set(EVENT_TYPES)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert "── turn" not in run.stderr


async def test_cli_reads_the_task_from_stdin(calc_repo: Path) -> None:
    async with ScriptedModelServer([LOOK, Turn(text="ok")]) as server:
        run = await run_cli(
            "--task",
            "-",
            "--format",
            "json",
            server=server,
            cwd=calc_repo,
            stdin="count the files\nplease\n",
        )
        first = server.requests[0]["messages"][1]["content"]
    assert run.code == 0
    assert first.startswith("count the files\nplease")


@pytest.mark.parametrize(
    ("turns", "args", "outcome", "code"),
    [
        ([Turn(text="Probably fine.")], [], "unverified", 2),
        ([LOOK] * 3, ["--max-iterations", "2"], "resource_cap", 3),
        ([LOOK] * 5, [], "stuck", 4),
        ([Turn(error=ScriptedError(401, message="invalid x-api-key"))], [], "provider_error", 5),
        (
            [Turn(tool_calls=[ToolCallSpec("run", {"command": "curl http://example.com"})])] * 3,
            [],
            "refused",
            6,
        ),
    ],
)
async def test_cli_exit_codes(
    calc_repo: Path, turns: list[Turn], args: list[str], outcome: str, code: int
) -> None:
    async with ScriptedModelServer(turns) as server:
        run = await run_cli("--task", "t", "--format", "json", *args, server=server, cwd=calc_repo)
    assert (run.code, run.json()["outcome"], run.json()["exit_code"]) == (code, outcome, code)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_cli_signal_cancels_cleanly_with_exit_7(calc_repo: Path, sig: signal.Signals) -> None:
    (calc_repo / "test_slow.py").write_text(
        "import os, time\n\n\ndef test_slow():\n"
        "    open('pid.txt', 'w').write(str(os.getpid()))\n    time.sleep(60)\n"
    )
    slow = ToolCallSpec("run", {"command": "python -m pytest -q test_slow.py"})
    async with ScriptedModelServer([Turn(tool_calls=[slow])]) as server:
        proc = await start_cli(
            "--task", "t", "--format", "ndjson", env=cli_environ(server), cwd=calc_repo
        )
        pid_file = calc_repo / "pid.txt"
        while not (pid_file.exists() and pid_file.read_text()):
            await asyncio.sleep(0.05)
        proc.send_signal(sig)
        out, err = await proc.communicate()
    assert proc.returncode == 7, err.decode()
    last = event_adapter().validate_json(out.decode().splitlines()[-1])
    assert last.type == "result" and last.outcome == "canceled" and last.exit_code == 7
    # pid.txt holds the pid in the sandbox's PID namespace: look for the test by its argv
    assert not _alive_with_arg(b"test_slow.py")


def _alive_with_arg(arg: bytes) -> bool:
    """Whether a live (not zombie) process of this machine has ``arg`` in its argv."""
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            status = (proc / "status").read_text()
        except OSError:
            continue
        if arg in argv and "zombie" not in status:
            return True
    return False


async def test_cli_signal_while_waiting_for_the_model(calc_repo: Path) -> None:
    async with ScriptedModelServer([Turn(text="late", delay_s=60)]) as server:
        proc = await start_cli(
            "--task", "t", "--format", "json", env=cli_environ(server), cwd=calc_repo
        )
        while not server.received:
            await asyncio.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, _ = await proc.communicate()
    assert proc.returncode == 7
    assert '"outcome":"canceled"' in out.decode()


async def test_cli_missing_key_is_a_setup_error_naming_the_variable(calc_repo: Path) -> None:
    run = await run_cli("--task", "t", "--provider", "anthropic", server=None, cwd=calc_repo)
    assert run.code == 1
    assert "ANTHROPIC_API_KEY" in run.stderr
    assert "Traceback" not in run.stderr


async def test_cli_no_provider_configured_is_a_setup_error(calc_repo: Path) -> None:
    run = await run_cli("--task", "t", "--format", "json", server=None, cwd=calc_repo)
    assert run.code == 1
    assert run.json()["outcome"] == "setup_error"
    assert "OPENAI_API_KEY" in run.stderr


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["--format", "xml", "--task", "t"], None, "invalid choice"),
        (["--max-iterations", "0", "--task", "t"], None, "must be at least 1"),
        ([], None, "--task is required"),
        (["--task", "-"], "   \n", "the task is empty"),
        (["--task", "t", "--workspace", "/no/such/dir"], None, "not a directory"),
        (["--task", "t", "--approve", "interactive"], None, "terminal"),
        (["--task", "t", "--review"], None, "--review-action prompt needs a terminal"),
    ],
)
async def test_cli_usage_and_setup_errors_exit_1(
    calc_repo: Path, args: list[str], stdin: str | None, message: str
) -> None:
    async with ScriptedModelServer([Turn(text="should not be asked")]) as server:
        run = await run_cli(*args, server=server, cwd=calc_repo, stdin=stdin)
        assert server.requests == []
    assert run.code == 1
    assert message in run.stderr
    assert run.stdout == "" and "Traceback" not in run.stderr


async def test_cli_secrets_never_reach_stdout_or_stderr(calc_repo: Path) -> None:
    turns = leaking_turns(calc_repo, SECRET)
    for fmt in ("text", "json", "ndjson"):
        async with ScriptedModelServer(turns) as server:
            run = await run_cli(
                "--task",
                "t",
                "--format",
                fmt,
                server=server,
                cwd=calc_repo,
                global_args=("-v", "-v"),
            )
        assert run.code == 0, run.stderr
        assert "[REDACTED]" in run.stdout
        assert SECRET not in run.stdout and SECRET not in run.stderr


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


REVIEW_TURNS = [
    Turn(tool_calls=[FIX_CALC]),
    Turn(tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})]),
    Turn(text="Fixed add()."),
]


@pytest.mark.parametrize("action", ["keep", "commit", "discard"])
async def test_cli_review_actions(git_repo: Path, action: str) -> None:
    async with ScriptedModelServer(REVIEW_TURNS) as server:
        run = await run_cli(
            "--task",
            "fix add",
            "--review",
            "--review-action",
            action,
            server=server,
            cwd=git_repo,
        )
    assert run.code == 0, run.stderr
    assert "-    return a - b" in run.stderr and "+    return a + b" in run.stderr
    content = (git_repo / "calc.py").read_text()
    log = _git(git_repo, "log", "--format=%s")
    status = _git(git_repo, "status", "--porcelain")
    if action == "discard":
        assert content.endswith("a - b\n") and status == ""
    elif action == "keep":
        assert content.endswith("a + b\n") and status == " M calc.py\n"
        assert log.splitlines() == ["initial"]
        assert "driveros: review: applied 1 file\n" in run.stderr
    else:
        assert content.endswith("a + b\n") and status == ""
        assert log.splitlines() == ["driveros: fix add", "initial"]
        assert re.search(r"driveros: review: committed [0-9a-f]+ \(1 file\)\n", run.stderr)


async def test_cli_review_commit_outside_a_repository_fails_without_writing(
    calc_repo: Path,
) -> None:
    async with ScriptedModelServer(REVIEW_TURNS) as server:
        run = await run_cli(
            "--task",
            "fix add",
            "--review",
            "--review-action",
            "commit",
            "--format",
            "json",
            server=server,
            cwd=calc_repo,
        )
    assert run.code == 1
    result = run.json()  # the result tells what happened, and its exit code is the status
    assert (result["outcome"], result["exit_code"]) == ("setup_error", 1)
    assert "commit failed, nothing was written" in result["error"]
    assert result["answer"]
    assert run.stderr.count("commit failed, nothing was written") == 1
    assert (calc_repo / "calc.py").read_text().endswith("a - b\n")


async def test_cli_ndjson_into_a_closed_pipe_finishes_quietly(calc_repo: Path) -> None:
    read_end, write_end = os.pipe()
    async with ScriptedModelServer([LOOK, Turn(text="ok")]) as server:
        proc = await asyncio.create_subprocess_exec(
            str(DRIVEROS),
            "agent",
            "--task",
            "t",
            "--format",
            "ndjson",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=write_end,
            stderr=asyncio.subprocess.PIPE,
            env=cli_environ(server),
            cwd=calc_repo,
        )
        os.close(write_end)
        os.close(read_end)  # like `| head -0`: nobody reads
        _, err = await proc.communicate()
    assert proc.returncode == 0
    assert b"Traceback" not in err and b"BrokenPipe" not in err
