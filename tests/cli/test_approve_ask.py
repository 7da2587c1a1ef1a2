"""``driveros agent --approve ask``: the question on /dev/tty, remembered for the run."""

from __future__ import annotations

from pathlib import Path

from tests._scripted import calc_repo as calc_repo  # the fixture

from driveros.agent import event_adapter
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from .conftest import cli_environ
from .test_agent_tty import _run_with_tty

HIDDEN = "sleep 0.1\r\x1b[Kecho innocent"


async def test_cli_ask_allow_for_this_run_asks_once_and_shows_the_whole_command(
    calc_repo: Path,
) -> None:
    call = ToolCallSpec("run", {"command": HIDDEN})
    turns = [Turn(tool_calls=[call]), Turn(tool_calls=[call]), Turn(text="done")]
    async with ScriptedModelServer(turns) as server:
        code, out, err, tty = await _run_with_tty(
            ["--task", "t", "--format", "ndjson", "--approve", "ask"],
            ["a"],
            env=cli_environ(server),
            cwd=calc_repo,
        )
    assert code == 0, err
    assert tty.count("Allow?") == 1
    assert "driveros wants to run: sleep 0.1\\r\\x1b[Kecho innocent" in tty
    assert "\x1b[K" not in tty
    assert "runs in: local (bubblewrap), network off, your workspace" in tty
    events = [event_adapter().validate_json(line) for line in out.splitlines()]
    approvals = [
        (e.decision, e.asked, e.answered_by, e.scope) for e in events if e.type == "approval"
    ]
    assert approvals == [("approved", True, "tty", "run"), ("allowed", False, "tty", "run")]
