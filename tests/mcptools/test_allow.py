"""MCP approvals a user can grant: ``"allow": [TOOL, …]`` on a server in the user's MCP config
lets ``policy`` (and ``ask``, without asking) run those tools; a refused call tells the model
and the user how to allow it; the ``ask`` question shows the call's arguments and where it
runs; ``never`` still runs none."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests._scripted import calc_repo as calc_repo  # the fixture, for these tests
from tests.mcptools.test_mcptools import DRIVEROS, NOTES_SERVER, _cli_env

from driveros.approval import ApprovalRequest, ExternalTool, Question, approval_policy
from driveros.mcptools import parse_mcp_config
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn


def _notes(allow: list[str] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": "notes-server"}
    if allow is not None:
        entry["allow"] = allow
    return {"mcpServers": {"notes": entry}}


def test_the_allow_list_is_read_from_the_config() -> None:
    [server] = parse_mcp_config(_notes(["add_note"]))
    assert server.allow == ["add_note"]
    assert server.allows("add_note") and not server.allows("drop_notes")
    [everything] = parse_mcp_config(_notes(["*"]))
    assert everything.allows("anything")
    [none] = parse_mcp_config(_notes(None))
    assert not none.allows("add_note")


def _external(allowed: bool) -> ExternalTool:
    return ExternalTool(
        server="notes",
        tool="add_note",
        allowed=allowed,
        runs_in="the MCP server 'notes': its own process, as you",
        config="mcpServers.notes in /home/u/.config/driveros/mcp.json",
    )


def _request(allowed: bool) -> ApprovalRequest:
    return ApprovalRequest(
        tool="notes__add_note", arguments={"text": "hi\x1b[2J"}, external=_external(allowed)
    )


@pytest.mark.parametrize("mode", ["policy", "ask"])
async def test_an_allowed_mcp_tool_runs_unasked(mode: str) -> None:
    asked: list[Question] = []

    class Asker:
        async def ask(self, question: Question) -> Any:
            asked.append(question)
            raise AssertionError("asked")

    approval = approval_policy(mode, asker=Asker() if mode == "ask" else None)
    decision = await approval.decide(_request(True))
    assert decision.allowed and "allow" in decision.reason and asked == []


async def test_a_refused_mcp_tool_says_how_to_allow_it() -> None:
    decision = await approval_policy("policy").decide(_request(False))
    assert not decision.allowed
    assert '"allow": ["add_note"]' in decision.reason
    assert "mcpServers.notes in /home/u/.config/driveros/mcp.json" in decision.reason
    assert "unknown tool" not in decision.reason


async def test_never_runs_no_mcp_tool_even_when_allowed() -> None:
    decision = await approval_policy("never").decide(_request(True))
    assert not decision.allowed


def test_the_question_shows_the_arguments_escaped_and_where_the_tool_runs() -> None:
    text = Question(request=_request(False)).message()
    assert 'arguments: {"text": "hi\\u001b[2J"}' in text
    assert "\x1b" not in text
    assert "runs in: the MCP server 'notes': its own process, as you" in text
    assert "your workspace" not in text and "local (this machine" not in text


def test_long_arguments_are_cut_and_say_so() -> None:
    request = ApprovalRequest(
        tool="notes__add_note", arguments={"text": "x" * 5000}, external=_external(False)
    )
    text = Question(request=request).message()
    assert len(text) < 2000 and "…" in text


async def _cli(config: Path, repo: Path, approve: str) -> tuple[int, list[dict[str, Any]], str]:
    call = ToolCallSpec("notes__add_note", {"text": "x"})
    async with ScriptedModelServer([Turn(tool_calls=[call]), Turn(text="Done.")]) as server:
        proc = await asyncio.create_subprocess_exec(
            str(DRIVEROS),
            *("agent", "--task", "note x", "--format", "ndjson", "--mcp-config", str(config)),
            *("--approve", approve),
            cwd=repo,
            env=_cli_env(server),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        out, err = await proc.communicate()
    return proc.returncode or 0, [json.loads(x) for x in out.decode().splitlines()], err.decode()


@pytest.mark.parametrize("allow", [["add_note"], None])
async def test_the_cli_honours_the_allow_list_under_policy(
    calc_repo: Path, tmp_path: Path, allow: list[str] | None
) -> None:
    notes = tmp_path / "notes.txt"
    entry: dict[str, Any] = {
        "command": sys.executable,
        "args": [str(NOTES_SERVER)],
        "env": {"NOTES_FILE": str(notes)},
    }
    if allow is not None:
        entry["allow"] = allow
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"notes": entry}}))
    code, events, err = await _cli(config, calc_repo, "policy")
    assert code in (0, 2), err
    assert "Traceback" not in err
    [approval] = [e for e in events if e["type"] == "approval"]
    if allow:
        assert approval["decision"] == "allowed", approval
        assert notes.read_text() == "x\n"
    else:
        assert approval["decision"] == "blocked"
        assert '"allow": ["add_note"]' in approval["reason"] and str(config) in approval["reason"]
        [result] = [e for e in events if e["type"] == "tool_result"]
        assert '"allow": ["add_note"]' in result["output"]
        assert not notes.exists()
