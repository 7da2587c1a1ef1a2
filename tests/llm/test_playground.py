"""``driveros playground`` as a real subprocess against scripted models on loopback."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from driveros.testing import ScriptedError, ScriptedModelServer, Turn

CLI = "import sys; from driveros.cli import main; sys.argv[0] = 'driveros'; main()"


async def _driveros(env: dict[str, str], cwd: Path, *args: str) -> tuple[int, str, str]:
    base = {"PATH": os.environ.get("PATH", ""), "HOME": str(cwd)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CLI,
        *args,
        env={**base, **env},
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_playground_table_for_every_configured_provider(tmp_path: Path) -> None:
    async with (
        ScriptedModelServer([Turn(text="Goroutines are cheap threads.")]) as oai,
        ScriptedModelServer([Turn(text="Lightweight concurrent functions.")]) as ant,
        ScriptedModelServer([Turn(error=ScriptedError(status=401, message="bad key"))]) as bad,
    ):
        env = {
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": oai.openai_base_url,
            "ANTHROPIC_API_KEY": "sk-ant-test",
            "ANTHROPIC_BASE_URL": ant.anthropic_base_url,
            "X_AI_API_KEY": "xai-test",
            "XAI_BASE_URL": bad.openai_base_url,
        }
        code, out, err = await _driveros(
            env, tmp_path, "playground", "--prompt", "goroutines?", "--no-ollama-probe"
        )
        sent = oai.requests[0]
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["provider", "model", "answer", "tokens", "in/out", "latency"]
    rows = {line.split()[0]: line for line in lines[2:]}
    assert list(rows) == ["anthropic", "openai", "xai"]
    assert "Lightweight concurrent functions." in rows["anthropic"]
    assert "Goroutines are cheap threads." in rows["openai"]
    assert "error: xai: 401 Unauthorized: bad key" in rows["xai"]
    assert sent["messages"] == [{"role": "user", "content": "goroutines?"}]
    assert "sk-test" not in out + err


async def test_playground_without_providers_exits_1(tmp_path: Path) -> None:
    code, out, err = await _driveros({}, tmp_path, "playground", "--no-ollama-probe")
    assert code == 1
    assert out == ""
    assert "no provider is configured" in err and "OPENAI_API_KEY" in err
    assert "Traceback" not in err


async def test_playground_all_failed_exits_5(tmp_path: Path) -> None:
    async with ScriptedModelServer([Turn(error=ScriptedError(status=400, message="nope"))]) as s:
        env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": s.openai_base_url}
        code, out, _ = await _driveros(env, tmp_path, "playground", "--no-ollama-probe")
    assert code == 5
    assert "error: openai: 400 Bad Request: nope" in out
