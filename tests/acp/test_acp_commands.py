"""Custom commands as ACP slash commands: ``available_commands_update`` (validated by the
official schema, like every message the client receives) and ``/name args`` prompts."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from driveros.testing import ScriptedModelServer, Turn
from driveros.trust import TrustStore

from ._client import AcpClient, Schema, start_agent
from .conftest import acp_environ, open_session

pytestmark = pytest.mark.e2e


#: The session's own commands, announced after the custom ones (docs/acp.md, "Checkpoints").
SESSION_COMMANDS = [
    {
        "name": "checkpoints",
        "description": "List the last prompt's checkpoints (one per turn that changed files)",
    },
    {
        "name": "revert",
        "description": "Drop the last prompt's checkpoints after N and undo what they wrote",
        "input": {"hint": "checkpoint number"},
    },
]
SESSION_NAMES = [c["name"] for c in SESSION_COMMANDS]


def _config_dir() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "driveros"


async def _announced(client: AcpClient) -> list[dict[str, object]]:
    for _ in range(200):
        found = [u for u in client.updates if u["sessionUpdate"] == "available_commands_update"]
        if found:
            return found[0]["availableCommands"]  # type: ignore[return-value]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no available_commands_update: {client.kinds()}")


async def test_acp_lists_and_runs_the_users_and_a_trusted_workspaces_commands(
    acp_schema: Schema, calc_repo: Path
) -> None:
    commands = _config_dir() / "commands"
    commands.mkdir(parents=True)
    (commands / "explain.md").write_text(
        "---\ndescription: Explain a file\nargument-hint: PATH\n---\nExplain $1 briefly.\n"
    )
    (calc_repo / ".driveros" / "commands").mkdir(parents=True)
    (calc_repo / ".driveros" / "commands" / "ship.md").write_text("Ship $ARGUMENTS now.\n")

    # untrusted: the user's command only
    async with ScriptedModelServer([Turn(text="explained")]) as server:
        client, session = await open_session(acp_schema, server, calc_repo)
        listed = await _announced(client)
        assert listed == [
            {"name": "explain", "description": "Explain a file", "input": {"hint": "PATH"}},
            *SESSION_COMMANDS,
        ]
        await client.request(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": "/explain calc.py"}]},
        )
        assert await client.close() == 0
        assert client.errors == []
        task = str(server.requests[0]["messages"][1]["content"])
        assert "Explain calc.py briefly." in task and "/explain" not in task

    # trusted: the workspace's too
    TrustStore.default().trust(calc_repo)
    async with ScriptedModelServer([Turn(text="shipped")]) as server:
        client, session = await open_session(acp_schema, server, calc_repo)
        listed = await _announced(client)
        assert [c["name"] for c in listed] == ["explain", "ship", *SESSION_NAMES]
        await client.request(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": "/ship v1 today"}]},
        )
        assert await client.close() == 0
        assert client.errors == []
        assert "Ship v1 today now." in str(server.requests[0]["messages"][1]["content"])


async def test_acp_a_loaded_session_gets_the_commands_too(
    acp_schema: Schema, calc_repo: Path
) -> None:
    commands = _config_dir() / "commands"
    commands.mkdir(parents=True)
    (commands / "explain.md").write_text("Explain $1.\n")
    async with ScriptedModelServer([Turn(text="ok")]) as server:
        client, session = await open_session(acp_schema, server, calc_repo)
        await _announced(client)
        assert await client.close() == 0
        client = await start_agent(acp_schema, env=acp_environ(server), cwd=calc_repo)
        await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        await client.request(
            "session/load", {"sessionId": session, "cwd": str(calc_repo), "mcpServers": []}
        )
        assert [c["name"] for c in await _announced(client)] == ["explain", *SESSION_NAMES]
        assert await client.close() == 0
        assert client.errors == []
