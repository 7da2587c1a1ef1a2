"""The semantic tools through `driveros acp`: the call is titled by its symbol, its kind is
`search`, and the result's places are the update's locations (validated against the official
ACP schema by the client)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests._scripted import calc_repo as calc_repo  # the fixture, for these tests
from tests.acp._client import Schema, install_sdk, start_agent
from tests.acp.conftest import acp_environ
from tests.semantic._oracle import program

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

pytestmark = pytest.mark.e2e


async def test_semantic_references_through_acp_carry_title_and_locations(
    calc_repo: Path,
) -> None:
    program("basedpyright")
    (calc_repo / "use.py").write_text("from calc import add\n\nprint(add(1, 2))\n")
    schema = Schema(install_sdk() / "schema" / "v1" / "schema.json")
    turns = [
        Turn(tool_calls=[ToolCallSpec("references", {"symbol": "add"})]),
        Turn(text="add is used in use.py."),
    ]
    async with ScriptedModelServer(turns) as server:
        client = await start_agent(schema, env=acp_environ(server), cwd=calc_repo)
        await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new = await client.request("session/new", {"cwd": str(calc_repo), "mcpServers": []})
        result = await client.request(
            "session/prompt",
            {"sessionId": new["sessionId"], "prompt": [{"type": "text", "text": "who uses add"}]},
        )
        assert await client.close() == 0
    assert client.errors == []
    assert result == {"stopReason": "end_turn"}
    (start,) = [u for u in client.updates if u["sessionUpdate"] == "tool_call"]
    assert (start["title"], start["kind"]) == ("references to add", "search")
    (done,) = [
        u
        for u in client.updates
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"
    ]
    places = [(loc["path"], loc["line"]) for loc in done["locations"]]
    assert places == [
        (str(calc_repo / "calc.py"), 1),
        (str(calc_repo / "test_calc.py"), 1),
        (str(calc_repo / "test_calc.py"), 5),
        (str(calc_repo / "use.py"), 1),
        (str(calc_repo / "use.py"), 3),
    ]
