"""The workspace root of a client that opened no folder (``nvim /tmp/x.py``, issue 16):
``rootUri``, else the directory of the first opened document; the server says which."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from driveros.testing import ToolCallSpec, Turn
from driveros_lsp import protocol
from driveros_lsp.protocol_models import ProposalParams
from tests.server._lsp import Editor, editor_session
from tests.server.conftest import CALC, model_env

SETTINGS = {"provider": "openai", "model": "scripted-model"}
TURNS = [
    Turn(
        tool_calls=[
            ToolCallSpec(
                "edit_file",
                {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
            )
        ]
    ),
    Turn(text="It adds now."),
]


def _root_lines(ed: Editor) -> list[str]:
    return [m.message for m in ed.client.log_messages if "workspace root" in m.message]


async def _run_to_proposal(ed: Editor) -> dict[str, object]:
    started = await ed.command(
        protocol.CMD_AGENT_START, {"task": "make add add", "uri": ed.uri("calc.py")}
    )
    run_id = started["runId"]
    proposal = await ed.wait_for(lambda: ed.last_proposal(run_id), what="a proposal")
    assert isinstance(proposal, dict)
    ProposalParams.model_validate(proposal)  # the documented shape
    return proposal


async def test_no_folder_and_no_root_uri_uses_the_first_opened_documents_directory(
    workspace: Path, scripted_model
) -> None:
    async with (
        scripted_model(TURNS) as model,
        editor_session(
            workspace,
            profile="neovim",
            env=model_env(model),
            settings=SETTINGS,
            root_uri=False,
            workspace_folders=False,
        ) as ed,
    ):
        ed.open("calc.py")
        proposal = await _run_to_proposal(ed)
        files = proposal["files"]
        assert isinstance(files, list)
        assert [f["path"] for f in files] == ["calc.py"]
        assert files[0]["uri"] == ed.uri("calc.py")
        assert files[0]["newText"] == CALC.replace("a - b", "a + b")
        lines = _root_lines(ed)
        assert len(lines) == 1, lines
        assert str(workspace) in lines[0]
        assert "first opened document" in lines[0]


async def test_root_uri_without_workspace_folders_is_the_root(
    workspace: Path, scripted_model
) -> None:
    (workspace / "sub").mkdir()
    (workspace / "sub" / "other.py").write_text("x = 1\n")
    async with (
        scripted_model(TURNS) as model,
        editor_session(
            workspace,
            profile="neovim",
            env=model_env(model),
            settings=SETTINGS,
            workspace_folders=False,
        ) as ed,
    ):
        ed.open("sub/other.py")  # a document elsewhere does not move the root
        ed.open("calc.py")
        proposal = await _run_to_proposal(ed)
        files = proposal["files"]
        assert isinstance(files, list)
        assert [f["path"] for f in files] == ["calc.py"]
        lines = _root_lines(ed)
        assert len(lines) == 1, lines
        assert str(workspace) in lines[0] and "rootUri" in lines[0]


async def test_nothing_opened_and_no_root_is_a_clear_request_failure(workspace: Path) -> None:
    async with editor_session(workspace, root_uri=False, workspace_folders=False) as ed:
        with pytest.raises(JsonRpcException) as info:
            await ed.command(protocol.CMD_AGENT_START, {"task": "anything"})
        assert "open a file or a folder" in str(info.value)
        listing = await ed.command(protocol.CMD_AGENT_LIST)
        assert listing["runs"] == []
        # a non-file document gives no root either
        ed.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(
                    uri="untitled:Untitled-1", language_id="python", version=1, text="x\n"
                )
            )
        )
        with pytest.raises(JsonRpcException):
            await ed.command(protocol.CMD_AGENT_START, {"task": "anything"})
