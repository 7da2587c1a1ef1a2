"""Session-wide behaviour: settings, concurrency, the stdout guard, a non-blocking loop."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from driveros.testing import ToolCallSpec, Turn
from driveros_lsp import protocol
from tests.server._lsp import editor_session
from tests.server.conftest import model_env
from tests.server.test_flow import FIX_TURNS, SETTINGS, diagnostic, run_state, wait_state

HERE = Path(__file__).resolve().parent


async def test_settings_invalid_values_warn_and_fall_back(workspace: Path, scripted_model) -> None:
    looping = [Turn(tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})])]
    async with (
        scripted_model(looping, repeat_last=True) as model,
        editor_session(
            workspace,
            env=model_env(model),
            settings={"driveros": {**SETTINGS, "maxIterations": "many", "colour": "red"}},
        ) as ed,
    ):
        assert ed.initialize_result.server_info.name == "driveros-lsp"  # type: ignore[attr-defined]
        await ed.wait_for(lambda: ed.client.messages, what="a settings warning")
        warning = ed.client.messages[0]
        assert warning.type == lsp.MessageType.Warning
        assert "'maxIterations'" in warning.message and "'colour'" in warning.message

        ed.client.workspace_did_change_configuration(
            lsp.DidChangeConfigurationParams(
                settings={"driveros": {**SETTINGS, "maxIterations": 2}}
            )
        )
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "loop"}))["runId"]
        await wait_state(ed, run_id, "finished")
        await ed.wait_for(lambda: ed.events(run_id, "result"), what="the result")
        result = ed.events(run_id, "result")[0]
        assert (result["outcome"], result["turns"]) == ("resource_cap", 2)
        assert len(ed.client.messages) == 1

        # a change notification without settings: the server pulls the section
        ed.client.set_configuration({**SETTINGS, "maxIterations": 1}, section="driveros")
        ed.client.workspace_did_change_configuration(
            lsp.DidChangeConfigurationParams(settings=None)
        )
        run_id = await _start_when_pulled(ed)
        result = ed.events(run_id, "result")[0]
        assert (result["outcome"], result["turns"]) == ("resource_cap", 1)


async def _start_when_pulled(ed: Any) -> str:
    """Start a run once the pulled settings apply (the pull is asynchronous)."""
    for _ in range(50):
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "loop"}))["runId"]
        await wait_state(ed, run_id, "finished")
        await ed.wait_for(lambda: ed.events(run_id, "result"), what="the result")  # noqa: B023
        if ed.events(run_id, "result")[0]["turns"] == 1:
            return str(run_id)
    raise AssertionError("the pulled settings never applied")


async def test_session_two_concurrent_runs_and_the_cap(workspace: Path, scripted_model) -> None:
    turns = [Turn(text="first", delay_s=4), Turn(text="second", delay_s=4)]
    async with (
        scripted_model(turns) as model,
        editor_session(
            workspace, env=model_env(model), settings={**SETTINGS, "maxConcurrentRuns": 2}
        ) as ed,
    ):
        a = (await ed.command(protocol.CMD_AGENT_START, {"task": "one"}))["runId"]
        b = (await ed.command(protocol.CMD_AGENT_START, {"task": "two"}))["runId"]
        assert a != b
        listing = await ed.command(protocol.CMD_AGENT_LIST)
        assert sorted(r["state"] for r in listing["runs"]) == ["running", "running"]
        with pytest.raises(JsonRpcException) as err:
            await ed.command(protocol.CMD_AGENT_START, {"task": "three"})
        assert err.value.code == -32803 and "maxConcurrentRuns" in err.value.message
        await wait_state(ed, a, "finished")
        await wait_state(ed, b, "finished")
        await ed.wait_for(
            lambda: ed.events(a, "result") and ed.events(b, "result"), what="both results"
        )
        answers = {ed.events(r, "result")[0]["answer"] for r in (a, b)}
        assert answers == {"first", "second"}
        await ed.wait_for(lambda: ed.progress_ended(a) and ed.progress_ended(b), what="both ends")
        assert ed.progress(a)[0].message == "one" and ed.progress(b)[0].message == "two"


async def test_session_stdout_noise_never_reaches_the_client(workspace: Path) -> None:
    command = [sys.executable, str(HERE / "_noisy_server.py")]
    async with editor_session(workspace, command=command) as ed:
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "be noisy"}))["runId"]
        await wait_state(ed, run_id, "finished")
        assert await run_state(ed, run_id) == "finished"
        await ed.wait_for(lambda: ed.events(run_id, "result"), what="the result event")
        assert ed.client.error is None
        assert [e["type"] for e in ed.events(run_id)] == ["run_started", "result"]


async def test_session_event_loop_never_blocks(
    workspace: Path, scripted_model, tmp_path: Path
) -> None:
    log = tmp_path / "slow.log"
    command = [sys.executable, str(HERE / "_watchdog_server.py"), "0.2", str(log)]
    async with (
        scripted_model(FIX_TURNS) as model,
        editor_session(workspace, env=model_env(model), settings=SETTINGS, command=command) as ed,
    ):
        ed.open("calc.py")
        for _ in range(3):
            await ed.code_actions("calc.py", [diagnostic()])
        run_id = (
            await ed.command(
                protocol.CMD_AGENT_FIX, {"uri": ed.uri("calc.py"), "diagnostics": [], "all": True}
            )
        )["runId"]
        await wait_state(ed, run_id, "accepted")
        assert "return a + b" in ed.text("calc.py")
    assert not log.exists() or log.read_text() == ""


async def test_session_over_tcp(workspace: Path) -> None:
    import asyncio
    import re

    from pytest_lsp.client import make_test_lsp_client

    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "driveros_lsp",
        "--tcp",
        "127.0.0.1:0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stderr is not None
        said = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
        said += (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
        token_file = re.search(r"token file: (.+)", said)
        match = re.search(r"listening on ([\d.]+):(\d+)", said)
        assert match and token_file, said
        token = Path(token_file.group(1).strip()).read_text().strip()
        client = make_test_lsp_client()
        await client.start_tcp(match.group(1), int(match.group(2)))
        await client.initialize_session(
            lsp.InitializeParams(
                capabilities=lsp.ClientCapabilities(),
                root_uri=workspace.as_uri(),
                initialization_options={"driverosToken": token},
            )
        )
        listing = await client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command=protocol.CMD_AGENT_LIST)
        )
        assert listing == {"runs": []}
        await client.shutdown_async(None)
        client.exit(None)
        assert await asyncio.wait_for(proc.wait(), 60) == 0
        await client.stop()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_session_setup_errors_reach_the_user(workspace: Path) -> None:
    # no provider key anywhere: the run ends setup_error and the user is told why
    async with editor_session(workspace, settings={"provider": "openai"}) as ed:
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "hello"}))["runId"]
        await wait_state(ed, run_id, "finished")
        errors = await ed.wait_for(
            lambda: [m for m in ed.client.messages if m.type == lsp.MessageType.Error],
            what="an error message",
        )
        assert run_id in errors[0].message and "OPENAI_API_KEY" in errors[0].message
        assert (await ed.command(protocol.CMD_AGENT_LIST))["runs"][0]["outcome"] == "setup_error"
