"""A prompt turn that ends before the agent starts still answers with a stopReason: canceled
before the run reached the model, or a setup failure (no provider configured)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from driveros.testing import ScriptedModelServer, Turn

from ._client import Schema, start_agent
from .conftest import acp_environ
from .test_acp_stdio import FS, _open, _prompt


async def test_a_cancel_right_after_the_prompt_answers_cancelled(
    acp_schema: Schema, calc_repo: Path
) -> None:
    async with ScriptedModelServer([Turn(text="too late", delay_s=120)]) as server:
        client, session = await _open(acp_schema, server, calc_repo)
        prompt = asyncio.create_task(client.request("session/prompt", _prompt(session, "slow")))
        await asyncio.sleep(0)  # the prompt task writes its request before the cancel goes
        await client.notify("session/cancel", {"sessionId": session})
        result = await asyncio.wait_for(prompt, 60)
        assert await client.close() == 0
    assert client.errors == []
    assert result == {"stopReason": "cancelled"}
    assert "too late" not in client.text()


async def test_a_setup_error_answers_with_a_stop_reason_and_says_why(
    acp_schema: Schema, calc_repo: Path
) -> None:
    async with ScriptedModelServer([Turn(text="unused")]) as server:
        env = {k: v for k, v in acp_environ(server).items() if not k.startswith("OPENAI_")}
    client = await start_agent(acp_schema, env=env, cwd=calc_repo)
    await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": FS})
    new = await client.request("session/new", {"cwd": str(calc_repo), "mcpServers": []})
    result = await asyncio.wait_for(
        client.request("session/prompt", _prompt(new["sessionId"], "fix it")), 60
    )
    assert await client.close() == 0
    assert client.errors == []
    assert result == {"stopReason": "end_turn"}
    assert "setup_error" in client.text()
