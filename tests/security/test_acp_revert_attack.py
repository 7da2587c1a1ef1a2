"""ACP ``/revert N`` with a hostile N (the prompt text is the client's, or pasted from
anywhere): negative, huge, not a number, Unicode digits (``٣`` is ``isdigit()`` and
``int()`` reads it as 3; ``²`` is ``isdigit()`` and ``int()`` refuses it). Each is answered
with the usage line: nothing is reverted, no error reaches the client, no model request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests._scripted import calc_repo as calc_repo  # the fixture
from tests.acp._client import Schema, start_agent
from tests.acp.conftest import acp_environ
from tests.acp.conftest import acp_schema as acp_schema  # the fixture
from tests.acp.conftest import acp_sdk as acp_sdk  # the fixture

pytestmark = pytest.mark.e2e

HOSTILE = ["-1", "99999999999999999999", "1e3", "0x1", "\u0663", "\u00b2", "\uff11", "1 2", "1\n2"]
TURNS = [
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "plan.txt", "content": "plan\n"})]),
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "extra.txt", "content": "more\n"})]),
    Turn(text="Done."),
]


def _prompt(session: str, text: str) -> dict[str, Any]:
    return {"sessionId": session, "prompt": [{"type": "text", "text": text}]}


async def test_acp_revert_attack_hostile_numbers_are_a_usage_line(
    acp_schema: Schema, calc_repo: Path
) -> None:
    async with ScriptedModelServer(TURNS) as server:
        client = await start_agent(acp_schema, env=acp_environ(server), cwd=calc_repo)
        await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new = await client.request("session/new", {"cwd": str(calc_repo), "mcpServers": []})
        session = new["sessionId"]

        async def allow(params: dict[str, Any]) -> dict[str, Any]:
            return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

        client.handlers["session/request_permission"] = allow
        await client.request("session/prompt", _prompt(session, "two files"))
        asked = len(server.requests)
        replies: dict[str, str] = {}
        for n in HOSTILE:
            before = len(client.text())
            await client.request("session/prompt", _prompt(session, f"/revert {n}"))
            replies[n] = client.text()[before:]
        assert len(server.requests) == asked  # answered without the model
        assert await client.close() == 0
    assert client.errors == []
    for n, reply in replies.items():
        assert reply.startswith("Usage: /revert N"), (n, reply)
    assert (calc_repo / "plan.txt").read_text() == "plan\n"
    assert (calc_repo / "extra.txt").read_text() == "more\n"
