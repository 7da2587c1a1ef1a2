"""Load: an editor can turn the diagnostics feed off (the ``diagnostics`` setting); with it on,
every run of a server shares one bounded job queue (bench/bench_lsp.py measures the load)."""

from __future__ import annotations

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
