"""Iterating on a run through the CLI: ``--review-action hold`` keeps a three-turn run (one turn
a ``sed`` through ``run``) with a checkpoint per turn; ``driveros runs`` diffs, applies and
reverts by checkpoint in new processes; ``--resume`` continues it (conversation and state),
``--from N`` forks it, and conflicts with the user's edits behave as accept does."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from .conftest import DRIVEROS, CliRun, cli_environ, run_cli

THREE_TURNS = [
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "notes.txt", "content": "plan\n"})]),
    Turn(tool_calls=[ToolCallSpec("run", {"command": "sed -i 's/a - b/a + b/' calc.py"})]),
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "extra.txt", "content": "more\n"})]),
    Turn(text="Done in three turns."),
]


async def runs(*args: str, cwd: Path) -> CliRun:
    proc = await asyncio.create_subprocess_exec(
        str(DRIVEROS),
        "runs",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=cli_environ(None),
        cwd=cwd,
        start_new_session=True,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return CliRun(proc.returncode, out.decode(), err.decode())


async def _hold_three_turns(repo: Path) -> tuple[str, list[dict[str, Any]]]:
    async with ScriptedModelServer(THREE_TURNS) as server:
        run = await run_cli(
            "--task",
            "fix add in three steps",
            "--review",
            "--review-action",
            "hold",
            "--format",
            "ndjson",
            server=server,
            cwd=repo,
        )
    assert run.code == 0, run.stderr
    events = run.lines()
    return events[-1]["run_id"], events


def _status(repo: Path) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


async def test_hold_records_a_checkpoint_per_turn_and_writes_nothing(git_repo: Path) -> None:
    run_id, events = await _hold_three_turns(git_repo)
    checkpoints = [
        (e["turn"], e["checkpoint"], e["files"]) for e in events if e["type"] == "checkpoint"
    ]
    assert checkpoints == [(1, 1, ["notes.txt"]), (2, 2, ["calc.py"]), (3, 3, ["extra.txt"])]
    result = events[-1]
    assert result["type"] == "result" and result["outcome"] == "answered"
    assert [c["files"] for c in result["checkpoints"]] == [
        ["notes.txt"],
        ["calc.py"],
        ["extra.txt"],
    ]
    assert _status(git_repo) == ""  # nothing reached the user's files

    listed = await runs("list", "--workspace", str(git_repo), "--format", "json", cwd=git_repo)
    assert listed.code == 0, listed.stderr
    [held] = listed.json()
    assert held["run_id"] == run_id and held["task"] == "fix add in three steps"
    shown = await runs("show", run_id, "--format", "json", cwd=git_repo)
    assert [
        (c["checkpoint"], c["turn"], c["tools"], c["files"]) for c in shown.json()["checkpoints"]
    ] == [
        (1, 1, ["write_file"], ["notes.txt"]),
        (2, 2, ["run"], ["calc.py"]),
        (3, 3, ["write_file"], ["extra.txt"]),
    ]


async def test_diff_and_apply_through_two_then_revert(git_repo: Path) -> None:
    run_id, _ = await _hold_three_turns(git_repo)
    diff = await runs("diff", run_id, "--through", "2", cwd=git_repo)
    assert diff.code == 0, diff.stderr
    assert "b/notes.txt" in diff.stdout and "+    return a + b" in diff.stdout
    assert "extra.txt" not in diff.stdout
    one = await runs("diff", run_id, "--turn", "3", cwd=git_repo)
    assert "b/extra.txt" in one.stdout and "calc.py" not in one.stdout

    applied = await runs("apply", run_id, "--through", "2", cwd=git_repo)
    assert applied.code == 0, applied.stderr
    assert (git_repo / "notes.txt").read_text() == "plan\n"
    assert (git_repo / "calc.py").read_text().endswith("a + b\n")  # the shell edit
    assert not (git_repo / "extra.txt").exists()

    reverted = await runs("revert", run_id, "--to", "2", cwd=git_repo)
    assert reverted.code == 0, reverted.stderr
    shown = await runs("show", run_id, "--format", "json", cwd=git_repo)
    assert [c["checkpoint"] for c in shown.json()["checkpoints"]] == [1, 2]
    rest = await runs("diff", run_id, cwd=git_repo)
    assert "extra.txt" not in rest.stdout
    gone = await runs("discard", run_id, cwd=git_repo)
    assert gone.code == 0
    assert (await runs("list", "--format", "json", cwd=git_repo)).json() == []


async def test_apply_conflicts_with_the_users_edit_and_writes_nothing(git_repo: Path) -> None:
    run_id, _ = await _hold_three_turns(git_repo)
    (git_repo / "calc.py").write_text("def add(a, b):\n    return b + a  # mine\n")
    applied = await runs("apply", run_id, "--through", "2", cwd=git_repo)
    assert applied.code == 1
    assert "calc.py" in applied.stderr and "Traceback" not in applied.stderr
    assert not (git_repo / "notes.txt").exists()
    assert "# mine" in (git_repo / "calc.py").read_text()
    still = await runs("show", run_id, "--format", "json", cwd=git_repo)
    assert len(still.json()["checkpoints"]) == 3  # the run is still held


async def test_resume_continues_conversation_and_state_after_the_process_is_gone(
    git_repo: Path,
) -> None:
    run_id, _ = await _hold_three_turns(git_repo)
    follow = [
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": "extra.txt"})]),
        Turn(tool_calls=[ToolCallSpec("write_file", {"path": "more.txt", "content": "4\n"})]),
        Turn(text="Followed up."),
    ]
    async with ScriptedModelServer(follow) as server:
        run = await run_cli(
            "--resume",
            run_id,
            "--task",
            "now add more",
            "--format",
            "ndjson",
            server=server,
            cwd=git_repo,
        )
        first = json.dumps(server.requests[0])
        second = json.dumps(server.requests[1])
    assert run.code == 0, run.stderr
    assert "fix add in three steps" in first and "now add more" in first  # the conversation
    assert "more\\n" in second  # the held state: the earlier turn's file is there
    events = run.lines()
    cps = [(e["turn"], e["checkpoint"], e["files"]) for e in events if e["type"] == "checkpoint"]
    assert cps == [(6, 4, ["more.txt"])]  # turns and checkpoints continue the held run's
    assert events[-1]["run_id"] == run_id
    shown = await runs("show", run_id, "--format", "json", cwd=git_repo)
    assert [c["checkpoint"] for c in shown.json()["checkpoints"]] == [1, 2, 3, 4]
    assert _status(git_repo) == ""


async def test_from_forks_a_new_run_and_leaves_the_original(git_repo: Path) -> None:
    run_id, _ = await _hold_three_turns(git_repo)
    fork_turns = [
        Turn(tool_calls=[ToolCallSpec("list_files", {})]),
        Turn(text="Forked."),
    ]
    async with ScriptedModelServer(fork_turns) as server:
        run = await run_cli(
            "--resume",
            run_id,
            "--from",
            "1",
            "--task",
            "other way",
            "--format",
            "ndjson",
            server=server,
            cwd=git_repo,
        )
        listing = json.dumps(server.requests[1])
        first = json.dumps(server.requests[0])
    assert run.code == 0, run.stderr
    fork_id = run.lines()[-1]["run_id"]
    assert fork_id != run_id
    assert "notes.txt" in listing and "extra.txt" not in listing  # the state at checkpoint 1
    assert "fix add in three steps" in first  # the conversation up to checkpoint 1's turn
    diff = await runs("diff", fork_id, cwd=git_repo)
    assert "b/notes.txt" in diff.stdout and "calc.py" not in diff.stdout
    original = await runs("show", run_id, "--format", "json", cwd=git_repo)
    assert len(original.json()["checkpoints"]) == 3
    forked = await runs("show", fork_id, "--format", "json", cwd=git_repo)
    assert forked.json()["parent"] == f"{run_id}@1"


async def test_continue_resumes_the_workspaces_latest_run(git_repo: Path) -> None:
    run_id, _ = await _hold_three_turns(git_repo)
    look = Turn(tool_calls=[ToolCallSpec("list_files", {})])
    async with ScriptedModelServer([look, Turn(text="Continued.")]) as server:
        run = await run_cli(
            "--continue", "--task", "and then?", "--format", "json", server=server, cwd=git_repo
        )
        first = json.dumps(server.requests[0])
    assert run.code == 0, run.stderr
    assert run.json()["run_id"] == run_id and "fix add in three steps" in first


async def test_runs_of_an_unknown_run_fail_with_a_message(git_repo: Path) -> None:
    shown = await runs("show", "nosuchrun", cwd=git_repo)
    assert shown.code == 1 and "no held run matches" in shown.stderr
    async with ScriptedModelServer([Turn(text="x")]) as server:
        run = await run_cli("--resume", "nosuchrun", "--task", "t", server=server, cwd=git_repo)
        assert server.requests == []
    assert run.code == 1 and "no held run matches" in run.stderr


async def test_a_resumed_run_applied_with_keep_is_no_longer_held(git_repo: Path) -> None:
    run_id, _ = await _hold_three_turns(git_repo)
    look = Turn(tool_calls=[ToolCallSpec("list_files", {})])
    async with ScriptedModelServer([look, Turn(text="ok")]) as server:
        run = await run_cli(
            "--resume",
            run_id,
            "--task",
            "apply it",
            "--review-action",
            "keep",
            server=server,
            cwd=git_repo,
        )
    assert run.code == 0, run.stderr
    assert (git_repo / "extra.txt").read_text() == "more\n"
    assert (git_repo / "calc.py").read_text().endswith("a + b\n")
    assert (await runs("list", "--format", "json", cwd=git_repo)).json() == []


async def test_apply_named_paths_through_a_checkpoint_writes_only_those(git_repo: Path) -> None:
    run_id, _ = await _hold_three_turns(git_repo)
    applied = await runs("apply", run_id, "--through", "2", "notes.txt", cwd=git_repo)
    assert applied.code == 0, applied.stderr
    assert (git_repo / "notes.txt").read_text() == "plan\n"
    assert (git_repo / "calc.py").read_text().endswith("a - b\n")
    unknown = await runs("apply", run_id, "--through", "1", "calc.py", cwd=git_repo)
    assert unknown.code == 1 and "not among the changes through checkpoint 1" in unknown.stderr
    assert (
        len((await runs("show", run_id, "--format", "json", cwd=git_repo)).json()["checkpoints"])
        == 3
    )
