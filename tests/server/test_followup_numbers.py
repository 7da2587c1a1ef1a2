"""A follow-up continues its run's numbering in the trace (pygls client over stdio, the real
agent, a scripted model): turns go on after the turns already traced, checkpoints after the
last kept one, so a number the editor shows names one checkpoint of the whole run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from driveros.testing import ToolCallSpec, Turn
from driveros_lsp import protocol
from tests.server._lsp import editor_session
from tests.server.conftest import ModelFactory, model_env
from tests.server.test_flow import SETTINGS, restored_note, start_run, wait_state
from tests.server.test_iterate import THREE_TURNS

FOLLOW = [
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "four.txt", "content": "4\n"})]),
    Turn(text="Followed up."),
]
AGAIN = [
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "five.txt", "content": "5\n"})]),
    Turn(text="Again."),
]


def _numbers(events: list[dict[str, Any]]) -> list[tuple[str, int, int | None]]:
    kinds = ("turn_started", "checkpoint")
    return [(e["type"], e["turn"], e.get("checkpoint")) for e in events if e["type"] in kinds]


async def test_follow_ups_continue_the_runs_turn_and_checkpoint_numbers(
    workspace: Path, scripted_model: ModelFactory
) -> None:
    async with (
        scripted_model(THREE_TURNS + FOLLOW + AGAIN) as model,
        editor_session(workspace, profile="neovim", env=model_env(model), settings=SETTINGS) as ed,
    ):
        run_id = await start_run(ed, "three steps")
        first = len(ed.events(run_id))
        await ed.command(protocol.CMD_AGENT_FOLLOW_UP, {"runId": run_id, "task": "a fourth"})
        await wait_state(ed, run_id, "proposed")
        second = len(ed.events(run_id))
        await ed.command(protocol.CMD_AGENT_REVERT, {"runId": run_id, "to": 2})
        await ed.command(protocol.CMD_AGENT_FOLLOW_UP, {"runId": run_id, "task": "a fifth"})
        await wait_state(ed, run_id, "proposed")
        events = ed.events(run_id)
        paths = sorted(f["path"] for f in ed.last_proposal(run_id)["files"])
        await ed.command(protocol.CMD_REVIEW_REJECT, {"runId": run_id})
    assert _numbers(events[first:second]) == [
        ("turn_started", 5, None),
        ("checkpoint", 5, 4),
        ("turn_started", 6, None),
    ]
    # after a revert to 2, the next checkpoint is 3 again; turns still go on
    assert _numbers(events[second:]) == [
        ("turn_started", 7, None),
        ("checkpoint", 7, 3),
        ("turn_started", 8, None),
    ]
    result = events[-1]
    assert result["type"] == "result"
    assert result["checkpoints"][-1] | {"files": []} == {"checkpoint": 3, "turn": 7, "files": []}
    assert paths == ["calc.py", "five.txt", "plan.txt"]
    every = [e["turn"] for e in events if e["type"] in ("tool_call", "tool_result")]
    assert every == sorted(every)  # a turn's tools carry its number, in order


async def test_a_follow_up_after_a_restart_continues_the_kept_runs_turns(
    workspace: Path, tmp_path: Path, scripted_model: ModelFactory
) -> None:
    env_state = {"DRIVEROS_STATE_DIR": str(tmp_path / "state")}
    async with scripted_model(THREE_TURNS + FOLLOW) as model:
        env = {**model_env(model), **env_state}
        async with editor_session(workspace, profile="neovim", env=env, settings=SETTINGS) as ed:
            run_id = await start_run(ed, "three steps")
        async with editor_session(workspace, profile="neovim", env=env, settings=SETTINGS) as ed:
            await restored_note(ed)  # restored by the new server
            await ed.command(protocol.CMD_AGENT_FOLLOW_UP, {"runId": run_id, "task": "go on"})
            await wait_state(ed, run_id, "running", "proposed")
            await wait_state(ed, run_id, "proposed")
            events = ed.events(run_id)
            await ed.command(protocol.CMD_REVIEW_REJECT, {"runId": run_id})
    assert _numbers(events) == [
        ("turn_started", 5, None),
        ("checkpoint", 5, 4),
        ("turn_started", 6, None),
    ]
