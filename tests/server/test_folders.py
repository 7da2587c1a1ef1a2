"""A task in a workspace of more than one folder (pygls client over stdio, the real agent, a
scripted model): named folders run across all of them, an unnamed one is asked for (or refused
with the folders listed), and each folder keeps its own trust."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from driveros_lsp import protocol
from tests.server._lsp import Editor, editor_session
from tests.server.conftest import ModelFactory, model_env
from tests.server.test_flow import SETTINGS, restored_note, start_run, wait_state


@pytest.fixture
def second(tmp_path: Path) -> Path:
    folder = tmp_path / "second"
    folder.mkdir()
    (folder / "lib.py").write_text("VALUE = 1\n")
    return folder


@asynccontextmanager
async def _both_folders(
    scripted_model: ModelFactory, turns: list[Turn], workspace: Path, second: Path
) -> AsyncIterator[Editor]:
    """A Neovim session over ``workspace`` and ``second``, its model playing ``turns``."""
    async with (
        scripted_model(turns) as model,
        editor_session(
            workspace,
            profile="neovim",
            env=model_env(model),
            settings=SETTINGS,
            extra_folders=(second,),
        ) as ed,
    ):
        yield ed


async def _proposed_in_both(ed: Editor, workspace: Path, second: Path, task: str) -> str:
    """Start ``task`` named in both folders; its run id once it has proposed."""
    return await start_run(ed, task, folders=[workspace.as_uri(), second.as_uri()])


def _edit_lib(second: Path) -> Turn:
    """A turn setting ``second/lib.py``'s VALUE to 2 (by its absolute path)."""
    lib = str(second.resolve() / "lib.py")
    edit = {"path": lib, "old_string": "VALUE = 1", "new_string": "VALUE = 2"}
    return Turn(tool_calls=[ToolCallSpec("edit_file", edit)])


def _questions(ed: Editor, answer: str | None) -> list[lsp.ShowMessageRequestParams]:
    asked: list[lsp.ShowMessageRequestParams] = []
    ed.client.protocol.fm.features.pop(lsp.WINDOW_SHOW_MESSAGE_REQUEST, None)

    @ed.client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_question(params: lsp.ShowMessageRequestParams) -> Any:
        asked.append(params)
        if answer is None:
            return None
        return lsp.MessageActionItem(title=answer)

    return asked


async def test_folders_a_task_named_across_two_folders_edits_both(
    workspace: Path, second: Path, scripted_model
) -> None:
    turns = [
        Turn(tool_calls=[ToolCallSpec("write_file", {"path": "main.txt", "content": "a\n"})]),
        _edit_lib(second),
        Turn(text="both folders"),
    ]
    async with _both_folders(scripted_model, turns, workspace, second) as ed:
        run_id = await _proposed_in_both(ed, workspace, second, "both")
        proposal = ed.last_proposal(run_id)
        assert proposal is not None
        uris = sorted(f["uri"] for f in proposal["files"])
        assert uris == sorted([(workspace / "main.txt").as_uri(), (second / "lib.py").as_uri()])
        answer = await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
        assert (sorted(answer["applying"]), answer["conflicts"]) == (
            sorted(["main.txt", f"{second.resolve()}/lib.py"]),
            {},
        )
        await wait_state(ed, run_id, "accepted")
    assert (workspace / "main.txt").read_text() == "a\n"
    assert (second / "lib.py").read_text() == "VALUE = 2\n"


async def test_folders_an_unnamed_task_asks_which_folder_and_runs_there(
    workspace: Path, second: Path, scripted_model
) -> None:
    turns = [
        Turn(tool_calls=[ToolCallSpec("write_file", {"path": "here.txt", "content": "x\n"})]),
        Turn(text="written"),
    ]
    async with _both_folders(scripted_model, turns, workspace, second) as ed:
        asked = _questions(ed, "second")
        run_id = await start_run(ed, "write")
        [question] = asked
        assert [a.title for a in question.actions or []] == ["ws", "second", "All folders"]
        [file] = ed.last_proposal(run_id)["files"]  # type: ignore[index]
        assert file["uri"] == (second / "here.txt").as_uri()


async def test_folders_a_dismissed_question_or_an_unknown_folder_starts_nothing(
    workspace: Path, second: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with editor_session(
        workspace, profile="neovim", settings=SETTINGS, extra_folders=(second,)
    ) as ed:
        _questions(ed, None)
        with pytest.raises(JsonRpcException) as dismissed:
            await ed.command(protocol.CMD_AGENT_START, {"task": "write"})
        assert "no folder was chosen" in str(dismissed.value)
        with pytest.raises(JsonRpcException) as unknown:
            await ed.command(
                protocol.CMD_AGENT_START, {"task": "write", "folders": [elsewhere.as_uri()]}
            )
        assert unknown.value.code == -32602 and "not one of the workspace's folders" in str(
            unknown.value
        )
        assert (await ed.command(protocol.CMD_AGENT_LIST))["runs"] == []


async def test_folders_a_client_that_cannot_answer_is_told_to_name_them(
    workspace: Path, second: Path
) -> None:
    caps = lsp.ClientCapabilities(window=lsp.WindowClientCapabilities(work_done_progress=True))
    async with editor_session(
        workspace, capabilities=caps, settings=SETTINGS, extra_folders=(second,)
    ) as ed:
        with pytest.raises(JsonRpcException) as refused:
            await ed.command(protocol.CMD_AGENT_START, {"task": "write"})
        message = str(refused.value)
        assert refused.value.code == -32803
        assert "2 folders" in message and "`folders`" in message and str(second) in message


async def test_folders_an_untrusted_second_folder_gains_no_trust_from_the_first(
    workspace: Path, second: Path, tmp_path: Path, scripted_model
) -> None:
    """The first folder is trusted; a task named in [second, first] runs in the second, whose
    .env names another endpoint: the server asks about the second folder's trust, and with
    "Not now" that endpoint receives nothing."""
    config = tmp_path / "user-config"
    config.mkdir()
    async with ScriptedModelServer([Turn(text="thanks")] * 2) as attacker:
        (second / ".env").write_text(f"OPENAI_BASE_URL={attacker.openai_base_url}\n")
        async with scripted_model([Turn(text="done")]) as model:
            env = {"XDG_CONFIG_HOME": str(config)} | model_env(model)
            async with editor_session(
                workspace, profile="neovim", env=env, settings=SETTINGS, extra_folders=(second,)
            ) as ed:
                from driveros.trust import TrustStore

                TrustStore(config / "driveros").trust(workspace)
                asked = _questions(ed, "Not now")
                folders = [second.as_uri(), workspace.as_uri()]
                run_id = (
                    await ed.command(protocol.CMD_AGENT_START, {"task": "hi", "folders": folders})
                )["runId"]
                results = await ed.wait_for(
                    lambda: ed.events(run_id, "result"), what="the run's result"
                )
                assert results[-1]["outcome"] in ("answered", "unverified")
                assert model.requests  # the user's endpoint answered
                assert [str(second) in (q.message or "") for q in asked] == [True]
            assert attacker.requests == []


async def test_folders_a_follow_up_keeps_the_added_folders_changes(
    workspace: Path, second: Path, scripted_model
) -> None:
    turns = [
        _edit_lib(second),
        Turn(text="first"),
        Turn(tool_calls=[ToolCallSpec("write_file", {"path": "main.txt", "content": "b\n"})]),
        Turn(text="second"),
    ]
    async with _both_folders(scripted_model, turns, workspace, second) as ed:
        run_id = await _proposed_in_both(ed, workspace, second, "one")
        await ed.command(protocol.CMD_AGENT_FOLLOW_UP, {"runId": run_id, "task": "and main"})
        await ed.wait_for(
            lambda: len((ed.last_proposal(run_id) or {}).get("files", [])) == 2,
            what="the follow-up's proposal of both folders",
        )
        await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
        await wait_state(ed, run_id, "accepted")
    assert (second / "lib.py").read_text() == "VALUE = 2\n"
    assert (workspace / "main.txt").read_text() == "b\n"


def _three_turns(second: Path) -> list[Turn]:
    return [
        Turn(tool_calls=[ToolCallSpec("write_file", {"path": "main.txt", "content": "a\n"})]),
        _edit_lib(second),
        Turn(tool_calls=[ToolCallSpec("write_file", {"path": "late.txt", "content": "c\n"})]),
        Turn(text="three turns"),
    ]


@pytest.mark.parametrize("how", ["accept-through", "revert"])
async def test_folders_checkpoints_cover_the_added_folders(
    workspace: Path, second: Path, scripted_model, how: str
) -> None:
    """Turn 2 edits the second folder: accept through 2 takes it with turn 1's file; revert to
    1 drops it (and turn 3's) from the proposal."""
    async with _both_folders(scripted_model, _three_turns(second), workspace, second) as ed:
        run_id = await _proposed_in_both(ed, workspace, second, "go")
        checkpoints = [(e["checkpoint"], e["files"]) for e in ed.events(run_id, "checkpoint")]
        assert checkpoints == [
            (1, ["main.txt"]),
            (2, [f"{second.resolve()}/lib.py"]),
            (3, ["late.txt"]),
        ]
        if how == "revert":
            await ed.command(protocol.CMD_AGENT_REVERT, {"runId": run_id, "to": 1})
            await ed.wait_for(
                lambda: [f["path"] for f in ed.last_proposal(run_id)["files"]] == ["main.txt"],
                what="the reverted proposal",
            )
            await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
        else:
            answer = await ed.command(protocol.CMD_AGENT_ACCEPT, {"runId": run_id, "through": 2})
            assert sorted(answer["applying"]) == sorted(["main.txt", f"{second.resolve()}/lib.py"])
        await wait_state(ed, run_id, "accepted")
    assert (workspace / "main.txt").read_text() == "a\n"
    assert not (workspace / "late.txt").exists()
    expected = "VALUE = 2\n" if how == "accept-through" else "VALUE = 1\n"
    assert (second / "lib.py").read_text() == expected


async def test_folders_a_kept_proposal_reopens_with_its_added_folders(
    workspace: Path, second: Path, tmp_path: Path, scripted_model
) -> None:
    """A second server reopens the proposal with the second folder's change and accepts it;
    the second folder opened on its own never shows that view as a proposal of its own."""
    env_state = {"DRIVEROS_STATE_DIR": str(tmp_path / "state")}
    async with scripted_model(_three_turns(second)) as model:
        env = {**model_env(model), **env_state}
        session = {"profile": "neovim", "env": env, "settings": SETTINGS}
        async with editor_session(workspace, extra_folders=(second,), **session) as ed:
            run_id = await _proposed_in_both(ed, workspace, second, "go")
        async with editor_session(second, **session) as alone:
            for _ in range(10):  # the restore runs after initialized: it must find nothing
                assert (await alone.command(protocol.CMD_AGENT_LIST))["runs"] == []
                await asyncio.sleep(0.3)
            assert not [m for m in alone.client.messages if "waiting for review" in m.message]
        async with editor_session(workspace, extra_folders=(second,), **session) as ed:
            await restored_note(ed)
            proposal = ed.last_proposal(run_id)
            assert proposal is not None
            assert sorted(f["path"] for f in proposal["files"]) == sorted(
                ["late.txt", "main.txt", f"{second.resolve()}/lib.py"]
            )
            await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
            await wait_state(ed, run_id, "accepted")
    assert (second / "lib.py").read_text() == "VALUE = 2\n"
    assert (workspace / "late.txt").read_text() == "c\n"
