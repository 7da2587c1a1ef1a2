"""The seed scenario end to end through the real ``driveros agent`` and ``driveros memory``
commands (subprocesses), with the scripted model on loopback as the only fake.

Run 1 reads go.mod to answer and remembers the module path; run 2 gets it recalled and needs
fewer tool calls; after go.mod changes, a grounded run replaces the stale fact.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests.memory.conftest import make_repo

pytestmark = pytest.mark.e2e

FACT = "go.mod declares the module path example.com/demo"
NEW_FACT = "go.mod declares the module path example.com/renamed"


def driveros_bin() -> str:
    sibling = Path(sys.executable).parent / "driveros"
    return str(sibling) if sibling.exists() else (shutil.which("driveros") or "driveros")


def child_env(base_url: str | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_BASE_URL", "_MODEL"))
        and k not in ("OLLAMA_HOST", "DRIVEROS_MEMORY_PATH", "MNEME_EMBED_MODEL")
    }
    if base_url:
        env.update(OPENAI_API_KEY="sk-test-e2e", OPENAI_BASE_URL=base_url)
    return env


async def cli(cwd: Path, *args: str, base_url: str | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        driveros_bin(),
        *args,
        cwd=cwd,
        env=child_env(base_url),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def agent_run(
    tmp_path: Path, repo: Path, task: str, turns: list[Turn]
) -> tuple[list[dict[str, Any]], ScriptedModelServer]:
    async with ScriptedModelServer(turns) as server:
        code, out, err = await cli(
            tmp_path,
            "agent",
            "--task",
            task,
            "--format",
            "ndjson",
            "--provider",
            "openai",
            "--model",
            "m",
            "--workspace",
            str(repo),
            "--memory",
            base_url=server.openai_base_url,
        )
    events = [json.loads(line) for line in out.splitlines()]
    assert code == 0, (out, err)
    assert events[-1]["type"] == "result" and events[-1]["outcome"] == "answered"
    return events, server


def tool_calls(events: list[dict[str, Any]]) -> int:
    return sum(1 for e in events if e["type"] == "tool_call")


def memory_events(events: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(e["action"], e.get("count")) for e in events if e["type"] == "memory"]


def facts_json(extracted: list[str]) -> Turn:
    return Turn(text="```json\n" + json.dumps({"facts": extracted}) + "\n```")


async def memory_list(tmp_path: Path, repo: Path, status: str) -> list[dict[str, Any]]:
    code, out, err = await cli(
        tmp_path, "memory", "list", "--status", status, "--format", "json", "--workspace", str(repo)
    )
    assert code == 0, err
    result: list[dict[str, Any]] = json.loads(out)
    return result


async def test_seed_two_runs_recall_then_a_grounded_run_replaces_the_stale_fact(
    tmp_path: Path,
) -> None:
    if not (Path(sys.executable).parent / "driveros").exists() and not shutil.which("driveros"):
        pytest.fail("the driveros console script is not installed in this environment")
    repo = make_repo(tmp_path / "demo")

    # Run 1: explores, reads go.mod, answers; memory extracts one fact (no related facts yet,
    # so no consolidation call).
    events1, server1 = await agent_run(
        tmp_path,
        repo,
        "What module path does this project declare?",
        [
            Turn(tool_calls=[ToolCallSpec(name="list_files", arguments={})]),
            Turn(tool_calls=[ToolCallSpec(name="read_file", arguments={"path": "go.mod"})]),
            Turn(text="The module path is example.com/demo."),
            facts_json([FACT]),
        ],
    )
    assert tool_calls(events1) == 2
    assert memory_events(events1) == [("recall", 0), ("store", 1)]
    assert len(server1.received) == 4
    [fact] = await memory_list(tmp_path, repo, "active")
    assert fact["text"] == FACT and fact["run_id"] == events1[0]["run_id"]

    # Run 2: a differently worded question; the fact is recalled into the first prompt, and
    # the model only confirms it with one read.
    events2, server2 = await agent_run(
        tmp_path,
        repo,
        "What is this project's module path?",
        [
            Turn(tool_calls=[ToolCallSpec(name="read_file", arguments={"path": "go.mod"})]),
            Turn(text="example.com/demo (confirmed in go.mod)."),
            facts_json([FACT]),
            Turn(
                text=json.dumps({"decisions": [{"fact": "N1", "action": "NONE", "target": "E1"}]})
            ),
        ],
    )
    first_prompt = json.dumps(server2.received[0].body)
    assert FACT in first_prompt and "possibly stale" in first_prompt
    assert tool_calls(events2) < tool_calls(events1)
    assert memory_events(events2) == [("recall", 1), ("store", 0)]
    assert [f["text"] for f in await memory_list(tmp_path, repo, "active")] == [FACT]

    # The repository changes; a grounded run reads the new value and the stale fact is replaced.
    (repo / "go.mod").write_text("module example.com/renamed\n\ngo 1.22\n")
    events3, server3 = await agent_run(
        tmp_path,
        repo,
        "What module path does this project declare?",
        [
            Turn(tool_calls=[ToolCallSpec(name="read_file", arguments={"path": "go.mod"})]),
            Turn(text="The module path is example.com/renamed (the note was stale)."),
            facts_json([NEW_FACT]),
            Turn(
                text=json.dumps({"decisions": [{"fact": "N1", "action": "UPDATE", "target": "E1"}]})
            ),
        ],
    )
    assert memory_events(events3) == [("recall", 1), ("store", 1)]
    consolidation = json.dumps(server3.received[3].body)
    assert f"E1 {FACT}" in consolidation and f"N1 {NEW_FACT}" in consolidation
    [active] = await memory_list(tmp_path, repo, "active")
    [stale] = await memory_list(tmp_path, repo, "superseded")
    assert active["text"] == NEW_FACT and active["run_id"] == events3[0]["run_id"]
    assert stale["text"] == FACT and stale["superseded_by"] == active["id"]

    # Nothing was hard-deleted: undo brings the old fact back (and retires the new one).
    code, _, err = await cli(tmp_path, "memory", "undo", "--workspace", str(repo))
    assert code == 0, err
    assert [f["text"] for f in await memory_list(tmp_path, repo, "active")] == [FACT]


async def test_a_run_never_stores_a_fact_holding_a_workspace_env_value(tmp_path: Path) -> None:
    """The run's memory refuses what its redactor masks: every .env value in the workspace
    (a nested one too), learned once at the start of the run."""
    if not (Path(sys.executable).parent / "driveros").exists() and not shutil.which("driveros"):
        pytest.fail("the driveros console script is not installed in this environment")
    repo = make_repo(tmp_path / "demo")
    (repo / "svc").mkdir()
    (repo / "svc" / ".env").write_text("DEPLOY_TOKEN=quartz-lantern-9931\n")
    events, _server = await agent_run(
        tmp_path,
        repo,
        "How is the service deployed?",
        [
            Turn(tool_calls=[ToolCallSpec(name="read_file", arguments={"path": "go.mod"})]),
            Turn(text="It deploys with a token."),
            facts_json(["the deploy token is quartz-lantern-9931", FACT]),
        ],
    )
    assert memory_events(events) == [("recall", 0), ("store", 1)]
    [fact] = await memory_list(tmp_path, repo, "active")
    assert fact["text"] == FACT
    assert "quartz-lantern-9931" not in json.dumps(events)


async def test_a_scripted_run_without_a_facts_turn_stores_nothing_and_says_so(
    tmp_path: Path,
) -> None:
    """Issue 29 row 10: a verified run's memory store asks the model for facts; a script
    without that turn gets "script exhausted", which is reported (docs/memory.md), and the
    empty store it leaves behind lists as "nothing remembered yet"."""
    repo = make_repo(tmp_path / "repo")
    events, _ = await agent_run(
        tmp_path,
        repo,
        "what is the module path?",
        [
            Turn(tool_calls=[ToolCallSpec(name="read_file", arguments={"path": "go.mod"})]),
            Turn(text="The module path is example.com/demo."),
        ],
    )
    [(action, _)] = [m for m in memory_events(events) if m[0] != "recall"]
    detail = next(e["detail"] for e in events if e["type"] == "memory" and e["action"] == action)
    assert action == "error" and "memory extraction unusable" in detail
    code, out, err = await cli(tmp_path, "memory", "list", "--workspace", str(repo))
    assert (code, out) == (0, "") and "nothing remembered yet" in err
    assert not (repo / ".agent-memory.db").exists()
