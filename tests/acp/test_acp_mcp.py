"""MCP servers from ``session/new``: their tools reach the model as ``SERVER__TOOL``, every
call goes through ``session/request_permission``, a server that fails is reported once."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.mcptools.notes import NOTES_SERVER, http_notes

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from ._client import Schema, start_agent
from .conftest import acp_environ

pytestmark = pytest.mark.e2e


def _notes(notes: Path) -> dict[str, Any]:
    return {
        "name": "notes",
        "command": sys.executable,
        "args": [str(NOTES_SERVER)],
        "env": [{"name": "NOTES_FILE", "value": str(notes)}],
    }


async def _run_with(
    acp_schema: Schema, repo: Path, servers: list[dict[str, Any]], option: str
) -> tuple[Any, Any, list[dict[str, Any]]]:
    call = ToolCallSpec("notes__add_note", {"text": "remember the milk"})
    async with ScriptedModelServer([Turn(tool_calls=[call]), Turn(text="Done.")]) as server:
        client = await start_agent(acp_schema, env=acp_environ(server), cwd=repo)
        await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new = await client.request("session/new", {"cwd": str(repo), "mcpServers": servers})

        async def answer(params: dict[str, Any]) -> dict[str, Any]:
            return {"outcome": {"outcome": "selected", "optionId": option}}

        client.handlers["session/request_permission"] = answer
        result = await client.request(
            "session/prompt",
            {"sessionId": new["sessionId"], "prompt": [{"type": "text", "text": "note it"}]},
        )
        assert await client.close() == 0
        tools = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert client.errors == []
    assert result["stopReason"] == "end_turn"
    return (
        client,
        tools,
        [r for r in client.requests if r["method"] == "session/request_permission"],
    )


async def test_an_mcp_tool_runs_after_permission_is_allowed(
    acp_schema: Schema, calc_repo: Path, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    client, tools, asks = await _run_with(acp_schema, calc_repo, [_notes(notes)], "allow_once")
    assert "notes__add_note" in tools
    [ask] = asks
    assert ask["params"]["toolCall"]["rawInput"] == {"text": "remember the milk"}
    assert notes.read_text() == "remember the milk\n"
    updates = [u for u in client.updates if u["sessionUpdate"] == "tool_call_update"]
    assert any("noted: remember the milk" in str(u.get("rawOutput")) for u in updates)


async def test_a_denied_mcp_tool_call_has_no_effect(
    acp_schema: Schema, calc_repo: Path, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    client, _, asks = await _run_with(acp_schema, calc_repo, [_notes(notes)], "reject_once")
    assert len(asks) == 1
    assert not notes.exists()
    assert any(u.get("status") == "failed" for u in client.updates)


async def test_a_server_that_fails_to_start_is_reported_once_and_the_run_goes_on(
    acp_schema: Schema, calc_repo: Path, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    broken = {"name": "broken", "command": str(tmp_path / "no-such-server"), "args": [], "env": []}
    client, tools, _ = await _run_with(acp_schema, calc_repo, [broken, _notes(notes)], "allow_once")
    assert client.text().count("MCP server 'broken' did not start") == 1
    assert "notes__add_note" in tools
    assert not any(t.startswith("broken__") for t in tools)
    assert notes.read_text() == "remember the milk\n"
    assert "Done." in client.text()


async def test_cancel_during_an_mcp_call_stops_the_server(
    acp_schema: Schema, calc_repo: Path, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    pid_file = tmp_path / "notes.txt.pid"
    call = ToolCallSpec("notes__wait_long", {})
    async with ScriptedModelServer([Turn(tool_calls=[call]), Turn(text="Done.")]) as server:
        client = await start_agent(acp_schema, env=acp_environ(server), cwd=calc_repo)
        await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new = await client.request(
            "session/new", {"cwd": str(calc_repo), "mcpServers": [_notes(notes)]}
        )

        async def allow(params: dict[str, Any]) -> dict[str, Any]:
            return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

        client.handlers["session/request_permission"] = allow
        prompt = asyncio.create_task(
            client.request(
                "session/prompt",
                {"sessionId": new["sessionId"], "prompt": [{"type": "text", "text": "wait"}]},
            )
        )
        while not pid_file.exists():  # the tool is running in the MCP server
            await asyncio.sleep(0.05)
        pid = int(pid_file.read_text())
        await client.notify("session/cancel", {"sessionId": new["sessionId"]})
        result = await prompt
        assert await client.close() == 0
    assert client.errors == []
    assert result == {"stopReason": "cancelled"}
    gone = False
    for _ in range(200):  # the server was stopped with the run (bounded wait, not a timing claim)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            gone = True
            break
        await asyncio.sleep(0.05)
    assert gone, "the MCP server outlived its run"


async def test_an_http_mcp_server_from_the_client_is_used_behind_permission(
    acp_schema: Schema, calc_repo: Path, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    async with http_notes(notes) as url:
        server = {"type": "http", "name": "notes", "url": url, "headers": []}
        _, tools, asks = await _run_with(acp_schema, calc_repo, [server], "allow_once")
    assert "notes__add_note" in tools
    assert len(asks) == 1
    assert notes.read_text() == "remember the milk\n"


TOKEN = "s3cret-mcp-token-4711"


async def test_http_headers_from_session_new_are_sent_on_every_request(
    acp_schema: Schema, calc_repo: Path, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    async with http_notes(notes, token=TOKEN) as url:
        headers = [{"name": "Authorization", "value": f"Bearer {TOKEN}"}]
        server = {"type": "http", "name": "notes", "url": url, "headers": headers}
        _, tools, asks = await _run_with(acp_schema, calc_repo, [server], "allow_once")
    assert "notes__add_note" in tools
    assert len(asks) == 1
    assert notes.read_text() == "remember the milk\n"
    seen = (tmp_path / "notes.txt.auth").read_text().splitlines()
    assert len(seen) >= 3  # initialize, list, call (and more): each one checked
    assert set(seen) <= {"POST ok", "GET ok", "DELETE ok"}


@pytest.mark.parametrize("value", [f"Bearer wrong-{TOKEN}", f"Bearer {TOKEN}\r\nX-Evil: 1"])
async def test_a_refused_or_bad_header_is_reported_without_its_value(
    acp_schema: Schema, calc_repo: Path, tmp_path: Path, value: str
) -> None:
    notes = tmp_path / "notes.txt"
    call = ToolCallSpec("notes__add_note", {"text": "x"})
    log = tmp_path / "agent.log"
    async with http_notes(notes, token=TOKEN) as url:
        server = {
            "type": "http",
            "name": "notes",
            "url": url,
            "headers": [{"name": "Authorization", "value": value}],
        }
        async with ScriptedModelServer([Turn(tool_calls=[call]), Turn(text="Done.")]) as model:
            with log.open("wb") as err:
                client = await start_agent(
                    acp_schema, env=acp_environ(model), cwd=calc_repo, options=("-v",), stderr=err
                )
            await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            new = await client.request(
                "session/new", {"cwd": str(calc_repo), "mcpServers": [server]}
            )
            result = await client.request(
                "session/prompt",
                {"sessionId": new["sessionId"], "prompt": [{"type": "text", "text": "note"}]},
            )
            assert await client.close() == 0
    assert client.errors == []
    assert result["stopReason"] == "end_turn"
    assert client.text().count("MCP server 'notes' did not start") == 1
    secret = value.split(" ", 1)[1].split("\r")[0]
    shown = json.dumps(client.updates) + log.read_text(errors="replace")
    assert secret not in shown
    assert "Traceback" not in shown
    assert not notes.exists()


async def test_the_users_own_mcp_file_gives_every_session_its_servers(
    acp_schema: Schema, calc_repo: Path, tmp_path: Path
) -> None:
    """~/.config/driveros/mcp.json (here under the test's XDG_CONFIG_HOME): no flag, and the
    client names no server."""
    from driveros.mcptools import user_mcp_file

    notes = tmp_path / "notes.txt"
    config = user_mcp_file()
    config.parent.mkdir(parents=True, exist_ok=True)
    entry = {
        "command": sys.executable,
        "args": [str(NOTES_SERVER)],
        "env": {"NOTES_FILE": str(notes)},
    }
    config.write_text(json.dumps({"mcpServers": {"notes": entry}}))
    _, tools, asks = await _run_with(acp_schema, calc_repo, [], "allow_once")
    assert "notes__add_note" in tools
    assert len(asks) == 1
    assert notes.read_text() == "remember the milk\n"
