"""ACP: a prompt's run records a checkpoint per turn that changed its copy (a ``sed`` through
``run`` included); ``/checkpoints`` lists them without a model request; the next prompt is the
follow-up: it sees the earlier conversation and the accepted state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from ._client import Schema, start_agent
from .conftest import acp_environ

pytestmark = pytest.mark.e2e

THREE_TURNS = [
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "plan.txt", "content": "plan\n"})]),
    Turn(tool_calls=[ToolCallSpec("run", {"command": "sed -i 's/a - b/a + b/' calc.py"})]),
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "extra.txt", "content": "more\n"})]),
    Turn(text="Done in three turns."),
]
FOLLOW_UP = [Turn(tool_calls=[ToolCallSpec("read_file", {"path": "plan.txt"})]), Turn(text="ok")]


def _prompt(session: str, text: str) -> dict[str, Any]:
    return {"sessionId": session, "prompt": [{"type": "text", "text": text}]}


async def test_acp_checkpoints_command_and_follow_up(acp_schema: Schema, calc_repo: Path) -> None:
    async with ScriptedModelServer(THREE_TURNS + FOLLOW_UP) as server:
        client = await start_agent(acp_schema, env=acp_environ(server), cwd=calc_repo)
        await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new = await client.request("session/new", {"cwd": str(calc_repo), "mcpServers": []})
        session = new["sessionId"]

        async def allow(params: dict[str, Any]) -> dict[str, Any]:
            return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

        client.handlers["session/request_permission"] = allow
        await client.request("session/prompt", _prompt(session, "three steps"))
        asked = len(server.requests)
        before = len(client.text())
        await client.request("session/prompt", _prompt(session, "/checkpoints"))
        listing = client.text()[before:]
        assert len(server.requests) == asked  # answered without the model
        await client.request("session/prompt", _prompt(session, "now check the plan"))
        follow = server.requests[asked]
        reread = str(server.requests[asked + 1]["messages"][-1])
        assert await client.close() == 0
    assert client.errors == []
    assert listing.splitlines() == [
        "Checkpoints of the last prompt (3):",
        "1. turn 1: plan.txt",
        "2. turn 2: calc.py",
        "3. turn 3: extra.txt",
    ]
    assert "three steps" in str(follow) and "now check the plan" in str(follow)
    assert "plan" in reread  # the follow-up's run sees the accepted state
    assert (calc_repo / "calc.py").read_text().endswith("a + b\n")  # the shell edit, accepted
