"""``driveros.agent.command``: the user's and a trusted workspace's custom commands, listed
for a picker and started as runs whose task is the command's text."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from driveros.testing import Turn
from driveros.trust import TrustStore
from driveros_lsp import protocol
from tests.server._lsp import editor_session
from tests.server.conftest import model_env

SETTINGS = {"provider": "openai", "model": "scripted-model"}


def _commands_dir() -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "driveros" / "commands"
    path.mkdir(parents=True, exist_ok=True)
    return path


async def test_lsp_custom_commands_listed_and_started(workspace: Path, scripted_model) -> None:
    (_commands_dir() / "explain.md").write_text(
        "---\ndescription: Explain a file\nargument-hint: PATH\n---\nExplain $1 in $2 words.\n"
    )
    (workspace / ".driveros" / "commands").mkdir(parents=True)
    (workspace / ".driveros" / "commands" / "ship.md").write_text("Ship $ARGUMENTS.\n")
    async with (
        scripted_model([Turn(text="explained")]) as model,
        editor_session(workspace, profile="vscode", env=model_env(model), settings=SETTINGS) as ed,
    ):
        listed = await ed.command(protocol.CMD_AGENT_COMMAND, {})
        assert listed == {
            "runId": None,
            "commands": [
                {
                    "name": "explain",
                    "description": "Explain a file",
                    "argumentHint": "PATH",
                    "source": "user",
                }
            ],
        }
        started = await ed.command(
            protocol.CMD_AGENT_COMMAND, {"name": "explain", "arguments": "calc.py ten"}
        )
        assert started["commands"] == [] and started["runId"]
        async with asyncio.timeout(60):
            while not model.requests:
                await asyncio.sleep(0.05)
        assert "Explain calc.py in ten words." in str(model.requests[0]["messages"][1])

    TrustStore.default().trust(workspace)
    async with (
        scripted_model([Turn(text="shipped")]) as model,
        editor_session(workspace, profile="vscode", env=model_env(model), settings=SETTINGS) as ed,
    ):
        listed = await ed.command(protocol.CMD_AGENT_COMMAND, {})
        assert [c["name"] for c in listed["commands"]] == ["explain", "ship"]
        await ed.command(protocol.CMD_AGENT_COMMAND, {"name": "ship", "arguments": ["v2"]})
        async with asyncio.timeout(60):
            while not model.requests:
                await asyncio.sleep(0.05)
        assert "Ship v2." in str(model.requests[0]["messages"][1])
