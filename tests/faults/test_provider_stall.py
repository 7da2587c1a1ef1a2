"""Row 7 of issue 15: a provider that accepts the request and then sends nothing, before the
headers or in the middle of the stream. ``driveros agent`` must end the run quickly as
``provider_error`` (exit 5) saying why, instead of waiting out the read timeout or the wall cap.
Row 12's messages are checked on the same path: an HTML 200, a reset, a 500."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.llm.faultserver import OPENAI_STREAM, Fault, FaultServer, error

DRIVEROS = Path(sys.executable).parent / "driveros"
FIRST_EVENT = OPENAI_STREAM.split(b"\n\n")[0] + b"\n\n"


@dataclass
class Run:
    code: int
    result: dict[str, Any]
    stderr: str
    requests: int


async def _agent(faults: list[Fault], tmp_path: Path, *flags: str) -> Run:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "README.md").write_text("hello\n")
    async with FaultServer(faults) as srv:
        env = {
            "PATH": f"{DRIVEROS.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": os.environ.get("HOME", "/tmp"),
            "LANG": "C.UTF-8",
            "DRIVEROS_DIAGNOSTICS": "off",
            "OPENAI_API_KEY": "test-key",
            "OPENAI_BASE_URL": srv.url,
            "OPENAI_MODEL": "m",
        }
        proc = await asyncio.create_subprocess_exec(
            str(DRIVEROS),
            "agent",
            "--task",
            "say hello",
            "--provider",
            "openai",
            "--format",
            "json",
            *flags,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=workspace,
            start_new_session=True,
        )
        out, err = await proc.communicate()
        requests = len(srv.requests)
    assert proc.returncode is not None
    return Run(proc.returncode, json.loads(out), err.decode(), requests)


async def test_provider_stall_before_headers_ends_provider_error(tmp_path: Path) -> None:
    run = await _agent([Fault(kind="stall")], tmp_path, "--first-byte-timeout", "0.5")
    assert run.code == 5, run.stderr
    assert run.result["outcome"] == "provider_error"
    assert run.result["exit_code"] == 5
    assert run.result["error"] == "no response from openai in 1 attempt over 0.5 s"
    # The first-byte timeout bounds the whole attempt sequence: with the default retry policy
    # (2 retries for transport errors) a silent provider is still asked once, so the run ends
    # after the timeout, never after one timeout per attempt (issue 28 row 7).
    assert run.requests == 1
    assert "Traceback" not in run.stderr


async def test_provider_stall_after_a_reset_names_both_attempts(tmp_path: Path) -> None:
    run = await _agent(
        [Fault(kind="reset"), Fault(kind="stall")], tmp_path, "--first-byte-timeout", "0.5"
    )
    assert run.code == 5, run.stderr
    assert run.result["error"] == "no response from openai in 2 attempts over 0.5 s"
    assert run.requests == 2


async def test_provider_stall_mid_stream_is_not_retried(tmp_path: Path) -> None:
    faults = [Fault(kind="hang", body=FIRST_EVENT)]
    run = await _agent(faults, tmp_path, "--idle-timeout", "0.5", "--first-byte-timeout", "30")
    assert run.code == 5, run.stderr
    assert run.result["outcome"] == "provider_error"
    assert run.result["error"] == ("no response from openai for 0.5 s")
    assert run.requests == 1


async def test_provider_html_200_says_it_was_a_page(tmp_path: Path) -> None:
    page = b"<html><head><title>Portal login</title></head><body>Sign in</body></html>"
    run = await _agent([Fault(body=page, content_type="text/html")], tmp_path)
    assert run.code == 5, run.stderr
    assert run.result["error"] == (
        "openai answered with an HTML page (status 200, content-type text/html), "
        "not an API response: 'Portal login'"
    )
    assert run.requests == 1


async def test_provider_500_shows_its_status(tmp_path: Path) -> None:
    run = await _agent([error(500, "upstream exploded")], tmp_path)
    assert run.code == 5, run.stderr
    assert run.result["error"] == "openai: 500 Internal Server Error: upstream exploded"


async def test_provider_reset_names_the_host(tmp_path: Path) -> None:
    run = await _agent([Fault(kind="reset")], tmp_path)
    assert run.code == 5, run.stderr
    assert run.result["error"].startswith("openai: connection reset by 127.0.0.1:")
    assert "ReadError" not in run.result["error"]


async def test_provider_stall_through_the_editor_uses_the_settings(tmp_path: Path) -> None:
    from driveros_lsp import protocol
    from tests.server._lsp import editor_session

    workspace = tmp_path / "editor-ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello\n")
    settings = {"firstByteTimeoutS": 0.5, "idleTimeoutS": 0.5, "diagnostics": False}
    async with FaultServer([Fault(kind="stall")]) as srv:
        env = {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": srv.url, "OPENAI_MODEL": "m"}
        async with editor_session(workspace, env=env, settings=settings) as ed:
            run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "say hi"}))["runId"]
            results = await ed.wait_for(
                lambda: ed.events(run_id, "result"), what="the run's result", timeout=60
            )
            bad = [m.message for m in ed.client.messages if "invalid settings" in m.message]
    assert not bad
    assert results[-1]["outcome"] == "provider_error"
    assert results[-1]["error"] == "no response from openai in 1 attempt over 0.5 s"
