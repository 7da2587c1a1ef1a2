"""Row 6 of issue 28: kill -9 of ``driveros acp`` mid-prompt, then ``driveros acp`` starts
again. The new start reclaims what the killed one left (its scratch view's mount, the scratch
directory, the lease), as the CLI and the language server do, without any prompt of its own.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from driveros.state import list_leases, mounts_under
from driveros.testing import ScriptedModelServer, Turn
from tests._scripted import calc_repo as calc_repo  # the fixture
from tests.acp._client import Schema, start_agent
from tests.acp.conftest import acp_environ
from tests.acp.conftest import acp_schema as acp_schema  # the fixture
from tests.acp.conftest import acp_sdk as acp_sdk  # the fixture
from tests.acp.test_acp_stdio import FS, _prompt
from tests.review._repo import scratch_copies

STALL = [Turn(text="never mind", delay_s=600)]


async def _until(check: Any, what: str, timeout: float = 60) -> None:
    async with asyncio.timeout(timeout):
        while not await check():
            await asyncio.sleep(0.05)


def _scratch_dirs(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith("driveros-scratch-"))


async def test_acp_killed_mid_prompt_is_cleaned_by_the_next_start(
    acp_schema: Schema, calc_repo: Path, tmp_path: Path
) -> None:
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    async with ScriptedModelServer(STALL) as server:
        env = {**acp_environ(server), "TMPDIR": str(private_tmp)}
        client = await start_agent(acp_schema, env=env, cwd=calc_repo)
        await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": FS})
        new = await client.request("session/new", {"cwd": str(calc_repo), "mcpServers": []})
        prompt = asyncio.create_task(
            client.request("session/prompt", _prompt(new["sessionId"], "stall"))
        )

        async def mid_prompt() -> bool:
            return bool(server.requests) and bool(await list_leases())

        await _until(mid_prompt, "the prompt's run reaching the model")
        assert len(_scratch_dirs(private_tmp)) == 1
        os.killpg(client.proc.pid, 9)
        await client.proc.wait()
        prompt.cancel()
        await asyncio.gather(prompt, return_exceptions=True)
    # kill -9 cleans nothing up ...
    assert await list_leases() != []
    assert len(_scratch_dirs(private_tmp)) == 1

    # ... the next start does, before any prompt.
    again = await start_agent(acp_schema, env=env, cwd=calc_repo)
    try:
        await again.request("initialize", {"protocolVersion": 1, "clientCapabilities": FS})

        async def cleaned() -> bool:
            return not await list_leases() and not _scratch_dirs(private_tmp)

        await _until(cleaned, "the startup cleanup of the killed agent's leftovers")
    finally:
        assert await again.close() == 0
    assert again.errors == []
    assert scratch_copies(calc_repo) == []
    assert mounts_under(private_tmp) == []
