"""``driveros acp`` driven by the official TypeScript SDK's client (node)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from tests._scripted import CALC, FIX_CALC

from driveros.testing import ScriptedModelServer, Turn

from ._client import DRIVEROS
from .conftest import acp_environ

pytestmark = pytest.mark.e2e

SCRIPT = Path(__file__).resolve().parent / "ts_client.mjs"


async def test_the_typescript_sdk_client_gets_the_fix_written_through_it(
    acp_sdk: Path, calc_repo: Path
) -> None:
    node = shutil.which("node")
    assert node is not None, "the ACP tests need node >= 20"
    entry = acp_sdk / json.loads((acp_sdk / "package.json").read_text())["main"]
    async with ScriptedModelServer([Turn(tool_calls=[FIX_CALC]), Turn(text="Fixed.")]) as server:
        proc = await asyncio.create_subprocess_exec(
            node,
            str(SCRIPT),
            entry.as_uri(),
            str(DRIVEROS),
            str(calc_repo),
            env=acp_environ(server),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()[-3000:]
    summary = json.loads(out.decode().strip().splitlines()[-1])
    assert summary["protocolVersion"] == 1
    assert summary["stopReason"] == "end_turn"
    assert summary["exit"] == 0
    assert {"agent_message_chunk", "tool_call", "tool_call_update"} <= set(summary["updates"])
    assert summary["permissions"] == [
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    ]
    assert summary["writes"] == [
        {"path": str(calc_repo / "calc.py"), "content": CALC.replace("a - b", "a + b")}
    ]
    assert (calc_repo / "calc.py").read_text() == CALC
