"""What clients keyed by ``toolCallId`` (CodeCompanion, Zed) rely on, checked against the real
``driveros acp`` and the official schema:

- a permission request reuses the id of the tool call it is about, and comes after it;
- every tool call ends with a final status (``completed`` or ``failed``);
- an edit on the run's private copy stays pending until the user decided: ``completed`` once
  written to the real file, ``failed`` when rejected;
- permission requests carry ``locations``;
- tool-call ids are driveros' own: unique in a session, also when the provider repeats ids and
  across ``session/load``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from tests._scripted import CALC, FIX_CALC
from tests.mcptools.notes import NOTES_SERVER

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from ._client import AcpClient, Schema
from .conftest import open_session

pytestmark = pytest.mark.e2e

FIXED = CALC.replace("a - b", "a + b")


def _prompt(session: str, text: str) -> dict[str, Any]:
    return {"sessionId": session, "prompt": [{"type": "text", "text": text}]}


def _answering(option: str, seen: list[tuple[int, dict[str, Any]]], client: AcpClient) -> Any:
    async def handler(params: dict[str, Any]) -> dict[str, Any]:
        # how many updates had arrived when the question came: the order the client saw
        seen.append((len(client.updates), params))
        return {"outcome": {"outcome": "selected", "optionId": option}}

    return handler


def _calls(client: AcpClient) -> dict[str, list[dict[str, Any]]]:
    """Every tool call's updates, by id, in order (the start first)."""
    by_id: dict[str, list[dict[str, Any]]] = {}
    for u in client.updates:
        if u["sessionUpdate"] in ("tool_call", "tool_call_update"):
            by_id.setdefault(u["toolCallId"], []).append(u)
    return by_id


def _final(updates: list[dict[str, Any]]) -> str | None:
    statuses = [u["status"] for u in updates if u.get("status")]
    return statuses[-1] if statuses else None


@pytest.mark.parametrize("option", ["allow_once", "reject_once"])
async def test_a_permission_request_is_about_the_tool_call_it_follows(
    acp_schema: Schema, calc_repo: Path, tmp_path: Path, option: str
) -> None:
    notes = tmp_path / "notes.txt"
    mcp = [
        {
            "name": "notes",
            "command": sys.executable,
            "args": [str(NOTES_SERVER)],
            "env": [{"name": "NOTES_FILE", "value": str(notes)}],
        }
    ]
    call = ToolCallSpec("notes__add_note", {"text": "remember the milk"})
    async with ScriptedModelServer([Turn(tool_calls=[call]), Turn(text="Done.")]) as server:
        client, session = await open_session(acp_schema, server, calc_repo, mcp_servers=mcp)
        seen: list[tuple[int, dict[str, Any]]] = []
        client.handlers["session/request_permission"] = _answering(option, seen, client)
        await client.request("session/prompt", _prompt(session, "note it"))
        assert await client.close() == 0
    assert client.errors == []
    [(arrived_after, ask)] = seen
    asked_id = ask["toolCall"]["toolCallId"]
    calls = _calls(client)
    assert asked_id in calls, "the permission request names a tool call the client was shown"
    start = calls[asked_id][0]
    assert start["sessionUpdate"] == "tool_call"
    assert client.updates.index(start) < arrived_after, "the tool call comes before the question"
    assert _final(calls[asked_id]) == ("completed" if option == "allow_once" else "failed")
    for call_id, updates in calls.items():
        assert _final(updates) in ("completed", "failed"), (call_id, updates)


@pytest.mark.parametrize("option", ["allow_once", "reject_once"])
async def test_an_edit_on_the_private_copy_is_pending_until_the_user_decides(
    acp_schema: Schema, calc_repo: Path, option: str
) -> None:
    async with ScriptedModelServer([Turn(tool_calls=[FIX_CALC]), Turn(text="Fixed.")]) as server:
        client, session = await open_session(acp_schema, server, calc_repo)
        seen: list[tuple[int, dict[str, Any]]] = []
        client.handlers["session/request_permission"] = _answering(option, seen, client)
        await client.request("session/prompt", _prompt(session, "fix the test"))
        assert await client.close() == 0
    assert client.errors == []
    [(arrived_after, ask)] = seen
    calls = _calls(client)
    edit_id = next(i for i, u in calls.items() if u[0].get("rawInput", {}).get("old_string"))
    before_decision = [u for u in calls[edit_id] if client.updates.index(u) < arrived_after]
    assert all(u.get("status") != "completed" for u in before_decision), before_decision
    assert _final(calls[edit_id]) == ("completed" if option == "allow_once" else "failed")
    assert ask["toolCall"]["locations"] == [{"path": str(calc_repo / "calc.py")}]
    assert (calc_repo / "calc.py").read_text() == (FIXED if option == "allow_once" else CALC)
    for call_id, updates in calls.items():
        assert _final(updates) in ("completed", "failed"), (call_id, updates)


async def test_tool_call_ids_are_unique_in_a_session_whatever_the_provider_sends(
    acp_schema: Schema, calc_repo: Path
) -> None:
    listing = ToolCallSpec("list_files", {}, id="call_1")
    reading = ToolCallSpec("read_file", {"path": "calc.py"}, id="call_1")
    turns = [
        Turn(tool_calls=[listing]),
        Turn(tool_calls=[reading]),
        Turn(text="Looked."),
        Turn(tool_calls=[ToolCallSpec("list_files", {}, id="call_1")]),
        Turn(text="Again."),
    ]
    async with ScriptedModelServer(turns) as server:
        client, session = await open_session(acp_schema, server, calc_repo)
        await client.request("session/prompt", _prompt(session, "look"))
        first = set(_calls(client))
        client.updates.clear()
        await client.request(
            "session/load", {"sessionId": session, "cwd": str(calc_repo), "mcpServers": []}
        )
        replayed = set(_calls(client))
        client.updates.clear()
        await client.request("session/prompt", _prompt(session, "look again"))
        second = set(_calls(client))
        assert await client.close() == 0
    assert client.errors == []
    assert len(first) == 2 and "call_1" not in first
    assert replayed == first
    assert len(second) == 1 and not second & first
