"""Iterating on a run from the editor (pygls client over stdio, the real agent, a scripted
model): checkpoints in the trace, accept through a checkpoint, revert to one, follow up."""

from __future__ import annotations

from pathlib import Path

from driveros.testing import ToolCallSpec, Turn
from driveros_lsp import protocol
from tests.server._lsp import editor_session
from tests.server.conftest import model_env
from tests.server.test_flow import SETTINGS, restored_note, start_run, wait_state

THREE_TURNS = [
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "plan.txt", "content": "plan\n"})]),
    Turn(tool_calls=[ToolCallSpec("run", {"command": "sed -i 's/a - b/a + b/' calc.py"})]),
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "extra.txt", "content": "more\n"})]),
    Turn(text="Done in three turns."),
]


def _checkpoints(ed: object, run_id: str) -> list[tuple[int, int, list[str]]]:
    events = ed.events(run_id, "checkpoint")  # type: ignore[attr-defined]
    return [(e["turn"], e["checkpoint"], e["files"]) for e in events]


async def test_accept_through_two_takes_the_first_two_turns_shell_edit_included(
    workspace: Path, scripted_model
) -> None:
    async with (
        scripted_model(THREE_TURNS) as model,
        editor_session(workspace, profile="neovim", env=model_env(model), settings=SETTINGS) as ed,
    ):
        run_id = await start_run(ed, "three steps")
        assert _checkpoints(ed, run_id) == [
            (1, 1, ["plan.txt"]),
            (2, 2, ["calc.py"]),
            (3, 3, ["extra.txt"]),
        ]
        answer = await ed.command(protocol.CMD_AGENT_ACCEPT, {"runId": run_id, "through": 2})
        assert sorted(answer["applying"]) == ["calc.py", "plan.txt"]
        await wait_state(ed, run_id, "accepted")
    assert (workspace / "plan.txt").read_text() == "plan\n"
    assert "a + b" in (workspace / "calc.py").read_text()
    assert not (workspace / "extra.txt").exists()


async def test_revert_then_follow_up_sees_the_conversation_and_the_reverted_state(
    workspace: Path, scripted_model
) -> None:
    follow = [
        Turn(tool_calls=[ToolCallSpec("list_files", {})]),
        Turn(tool_calls=[ToolCallSpec("write_file", {"path": "four.txt", "content": "4\n"})]),
        Turn(text="Followed up."),
    ]
    async with (
        scripted_model(THREE_TURNS + follow) as model,
        editor_session(workspace, profile="neovim", env=model_env(model), settings=SETTINGS) as ed,
    ):
        run_id = await start_run(ed, "three steps")
        state = await ed.command(protocol.CMD_AGENT_REVERT, {"runId": run_id, "to": 1})
        assert state == {"runId": run_id, "state": "proposed"}
        assert [f["path"] for f in ed.last_proposal(run_id)["files"]] == ["plan.txt"]
        asked = len(model.requests)
        state = await ed.command(
            protocol.CMD_AGENT_FOLLOW_UP, {"runId": run_id, "task": "now a fourth file"}
        )
        assert state["state"] == "running"
        await wait_state(ed, run_id, "proposed")
        first, second = model.requests[asked], model.requests[asked + 1]
        assert "three steps" in str(first) and "now a fourth file" in str(first)
        listing = str(second["messages"][-1])  # the list_files result after the follow-up
        assert "plan.txt" in listing and "extra.txt" not in listing  # the reverted state
        paths = sorted(f["path"] for f in ed.last_proposal(run_id)["files"])
        assert paths == ["four.txt", "plan.txt"]
        assert [c[1] for c in _checkpoints(ed, run_id)][-1] == 2  # numbering after the revert
    assert not (workspace / "plan.txt").exists()  # nothing reached the files before accept


async def test_a_fix_runs_in_the_workspace_folder_that_holds_the_file(
    workspace: Path, tmp_path: Path, scripted_model
) -> None:
    second = tmp_path / "second"
    second.mkdir()
    (second / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    fix = [
        Turn(
            tool_calls=[
                ToolCallSpec(
                    "edit_file",
                    {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"},
                )
            ]
        ),
        Turn(text="fixed"),
    ]
    diagnostic = {
        "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 16}},
        "message": "add subtracts",
        "severity": 1,
    }
    async with (
        scripted_model(fix) as model,
        editor_session(
            workspace,
            profile="neovim",
            env=model_env(model),
            settings=SETTINGS,
            extra_folders=(second,),
        ) as ed,
    ):
        uri = (second / "calc.py").as_uri()
        run_id = (
            await ed.command(protocol.CMD_AGENT_FIX, {"uri": uri, "diagnostics": [diagnostic]})
        )["runId"]
        await wait_state(ed, run_id, "proposed")
        [file] = ed.last_proposal(run_id)["files"]
        assert (file["path"], file["uri"]) == ("calc.py", uri)
        await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
        await wait_state(ed, run_id, "accepted")
    assert (second / "calc.py").read_text().endswith("a + b\n")
    assert "a - b" in (workspace / "calc.py").read_text()  # the first folder is untouched


async def test_a_follow_up_after_a_restart_continues_the_kept_conversation(
    workspace: Path, tmp_path: Path, scripted_model
) -> None:
    env_state = {"DRIVEROS_STATE_DIR": str(tmp_path / "state")}
    follow = [Turn(tool_calls=[ToolCallSpec("list_files", {})]), Turn(text="Followed up.")]
    async with scripted_model(THREE_TURNS + follow) as model:
        env = {**model_env(model), **env_state}
        async with editor_session(workspace, profile="neovim", env=env, settings=SETTINGS) as ed:
            run_id = await start_run(ed, "three steps")
        async with editor_session(workspace, profile="neovim", env=env, settings=SETTINGS) as ed:
            await restored_note(ed)  # restored by the new server
            state = await ed.command(protocol.CMD_AGENT_REVERT, {"runId": run_id, "to": 2})
            assert state["state"] == "proposed"
            asked = len(model.requests)
            await ed.command(protocol.CMD_AGENT_FOLLOW_UP, {"runId": run_id, "task": "go on"})
            await wait_state(ed, run_id, "running", "proposed")
            await wait_state(ed, run_id, "proposed")
            first = str(model.requests[asked])
            listing = str(model.requests[asked + 1]["messages"][-1])
    assert "three steps" in first and "go on" in first  # the conversation survived
    assert "calc.py" in listing and "plan.txt" in listing and "extra.txt" not in listing
