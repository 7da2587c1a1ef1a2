"""A language-server task across several workspace folders (``folders``, or "All folders")
gets the rules of ``--add-dir``: a second folder inside the run's workspace (two views of the
same files), one holding the home directory (the editor opened ``~`` beside a project: its
files would be shown to the run's commands and the model) or one holding a secret file (a
cloned ``.env``: its values are not in the run's redactor, so a prompt-injected ``cat`` would
send them to the model) is refused before any request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driveros.testing import ToolCallSpec, Turn
from driveros_lsp import protocol
from tests.server._lsp import editor_session
from tests.server.conftest import ModelFactory, model_env
from tests.server.conftest import private_state as private_state  # the fixture
from tests.server.conftest import scripted_model as scripted_model  # the fixture
from tests.server.conftest import workspace as workspace  # the fixture
from tests.server.test_flow import SETTINGS

SECRET = "correct-horse-battery-staple-4242"


#: What the refusal names, per case.
WHY = {"inside_workspace": "overlaps", "holds_home": "home", "holds_secret": "secret"}


@pytest.mark.parametrize("which", sorted(WHY))
async def test_lsp_folders_attack_a_folder_cli_would_refuse_is_refused(
    workspace: Path, tmp_path: Path, scripted_model: ModelFactory, which: str
) -> None:
    home = tmp_path / "homes" / "me"
    (home / "notes").mkdir(parents=True)
    (home / "notes" / "token.txt").write_text(f"{SECRET}\n")
    second = {
        "inside_workspace": workspace / "vendor",
        "holds_home": home.parent,
        "holds_secret": tmp_path / "service",
    }[which]
    second.mkdir(exist_ok=True)
    name = ".env" if which == "holds_secret" else "token.txt"
    (second / name).write_text(f"API_TOKEN={SECRET}\n")
    turns = [
        Turn(tool_calls=[ToolCallSpec("run", {"command": f"cat {second.resolve()}/{name}"})]),
        Turn(text="done"),
    ]
    async with (
        scripted_model(turns) as model,
        editor_session(
            workspace,
            profile="neovim",
            env={**model_env(model), "HOME": str(home)},
            settings=SETTINGS,
            extra_folders=(second,),
        ) as ed,
    ):
        folders = [workspace.as_uri(), second.as_uri()]
        try:
            started = await ed.command(protocol.CMD_AGENT_START, {"task": "t", "folders": folders})
        except Exception as exc:  # refused at once: the request names why
            assert WHY[which] in str(exc), exc
        else:
            run_id = started["runId"]
            results = await ed.wait_for(
                lambda: ed.events(run_id, "result"), what="the run's result"
            )
            assert results[-1]["outcome"] == "setup_error", results[-1]
            said = json.dumps(results[-1])
            assert WHY[which] in said, said
        seen = json.dumps(ed.traces) + json.dumps(model.requests, default=str)
    assert SECRET not in seen
    assert model.requests == []
