"""Load: an editor can turn the diagnostics feed off (the ``diagnostics`` setting); with it on,
every run of a server shares one bounded job queue (bench/bench_lsp.py measures the load)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from driveros_lsp import protocol
from tests.server._lsp import editor_session
from tests.server.conftest import model_env
from tests.server.conftest import private_state as private_state  # isolated state (autouse)
from tests.server.test_flow import SETTINGS, wait_state

BREAK = [
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "broken.py", "content": "def f(:\n"})]),
    Turn(text="wrote it"),
]


@pytest.mark.parametrize("diagnostics", [True, False], ids=["on", "off"])
async def test_server_load_diagnostics_setting_turns_the_feed_off(
    tmp_path: Path, diagnostics: bool
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "ok.py").write_text("X = 1\n")
    async with (
        ScriptedModelServer(BREAK) as model,
        editor_session(
            ws,
            profile="neovim",
            env=model_env(model),
            settings={**SETTINGS, "diagnostics": diagnostics},
        ) as ed,
    ):
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "break"}))["runId"]
        await wait_state(ed, run_id, "proposed")
        events = ed.events(run_id, "diagnostics")
        published = [p for p in ed.published if p.uri == ed.uri("broken.py")]
    if diagnostics:
        assert events and published and published[0].diagnostics
    else:
        assert events == [] and published == []


NICE_TESTS = (
    "import os\n\n\n"
    "def test_the_feed_ran_me() -> None:\n"
    "    assert False, 'marker: the feed ran this test'\n\n\n"
    "def test_checks_run_niced() -> None:\n"
    "    assert os.nice(0) >= 10, f'marker: the check ran at niceness {os.nice(0)}'\n"
)
WRITE_TESTS = [
    Turn(
        tool_calls=[
            ToolCallSpec("write_file", {"path": "tests/test_nice.py", "content": NICE_TESTS})
        ]
    ),
    Turn(text="wrote it"),
]


async def test_server_load_checks_run_niced_in_their_own_processes(tmp_path: Path) -> None:
    """Issue 28 row 11: the feed's checks (here pytest) run as background work, at niceness
    10 or more, so twenty runs' checks yield the cores to the server's event loop."""
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "pyproject.toml").write_text('[project]\nname = "nice"\nversion = "0"\n')
    (ws / "tests" / "test_ok.py").write_text("def test_ok() -> None:\n    pass\n")
    async with (
        ScriptedModelServer(WRITE_TESTS) as model,
        editor_session(ws, profile="neovim", env=model_env(model), settings=SETTINGS) as ed,
    ):
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "edit"}))["runId"]
        await wait_state(ed, run_id, "proposed")
        events = ed.events(run_id, "diagnostics")
    assert events and "pytest" in events[-1]["checks"], events
    shown = [i["message"] for e in events for i in e["new"]]
    assert any("test_the_feed_ran_me" in m for m in shown), shown  # pytest ran them
    assert not [m for m in shown if "test_checks_run_niced" in m], shown


async def test_server_load_agent_loop_shortens_the_switch_interval() -> None:
    """Runs share the interpreter lock with the LSP loop: once the agent loop exists, a
    request's system calls wait for the lock at most SWITCH_INTERVAL_S each, not 5 ms."""
    import sys

    from driveros_lsp._worker import SWITCH_INTERVAL_S, AgentLoop

    before = sys.getswitchinterval()
    agents = AgentLoop()
    try:
        assert await agents.run(asyncio.sleep(0, result="ran")) == "ran"
        assert sys.getswitchinterval() == SWITCH_INTERVAL_S < before
    finally:
        await agents.aclose()
        sys.setswitchinterval(before)
