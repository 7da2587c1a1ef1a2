"""A rename sees the editor's unsaved buffers of every file it touches (issue 31), not only
the file it names: through the language server (a buffer edited, not saved, before the run or
before a follow-up) the proposal is the server's rename of the text the editor has. The real
driveros-lsp, basedpyright in the run's sandbox, a scripted model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.acp._client import Schema, install_sdk, start_agent
from tests.acp.conftest import acp_environ
from tests.semantic._oracle import program
from tests.server._lsp import editor_session
from tests.server.conftest import model_env
from tests.server.test_flow import SETTINGS, wait_state

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from driveros_lsp import protocol

CALC = 'def compute_total(items):\n    """Sum the items."""\n    return sum(items)\n'
USE = (
    "from pkg.calc import compute_total\n\n\n"
    "def twice(items):\n    return 2 * compute_total(items)\n"
)
# unsaved in the editor: three lines more above the use, and a second use
USE_UNSAVED = (
    '"""Helpers."""\n\nimport os\n\nfrom pkg.calc import compute_total\n\n\n'
    "def twice(items):\n    return 2 * compute_total(items)\n\n\n"
    "def thrice(items):\n    return 3 * compute_total(items)\n"
)
RENAME = Turn(
    tool_calls=[ToolCallSpec("rename", {"symbol": "compute_total", "new_name": "grand_total"})]
)


def _project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/__init__.py").write_text("")
    (root / "pkg/calc.py").write_text(CALC)
    (root / "pkg/use.py").write_text(USE)
    return root


def _renamed(text: str) -> str:
    return text.replace("compute_total", "grand_total")


async def test_rename_in_an_editors_run_renames_the_unsaved_buffer_of_another_file(
    tmp_path: Path,
) -> None:
    program("basedpyright")
    root = _project(tmp_path / "ws")
    async with ScriptedModelServer([RENAME, Turn(text="Renamed.")]) as model:
        env = {**model_env(model), "DRIVEROS_STATE_DIR": str(tmp_path / "state")}
        async with editor_session(root, profile="neovim", env=env, settings=SETTINGS) as ed:
            ed.open("pkg/use.py")
            ed.type_text("pkg/use.py", USE_UNSAVED)
            run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "rename"}))["runId"]
            await wait_state(ed, run_id, "proposed")
            [result] = ed.events(run_id, "tool_result")
            files = {f["path"]: f for f in ed.last_proposal(run_id)["files"]}
            await ed.command(protocol.CMD_REVIEW_REJECT, {"runId": run_id})
    assert result["ok"], result
    assert files["pkg/use.py"]["newText"] == _renamed(USE_UNSAVED)
    assert files["pkg/calc.py"]["newText"] == _renamed(CALC)
    assert not files["pkg/use.py"]["conflict"]


async def test_rename_in_a_follow_up_renames_a_buffer_edited_since_the_run_started(
    tmp_path: Path,
) -> None:
    program("basedpyright")
    root = _project(tmp_path / "ws")
    first = Turn(tool_calls=[ToolCallSpec("write_file", {"path": "notes.txt", "content": "n\n"})])
    turns = [first, Turn(text="Noted."), RENAME, Turn(text="Renamed.")]
    async with ScriptedModelServer(turns) as model:
        env = {**model_env(model), "DRIVEROS_STATE_DIR": str(tmp_path / "state")}
        async with editor_session(root, profile="neovim", env=env, settings=SETTINGS) as ed:
            ed.open("pkg/use.py")
            run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "note"}))["runId"]
            await wait_state(ed, run_id, "proposed")
            ed.type_text("pkg/use.py", USE_UNSAVED)  # after the run took the buffer
            await ed.command(protocol.CMD_AGENT_FOLLOW_UP, {"runId": run_id, "task": "rename"})
            await wait_state(ed, run_id, "running", "proposed")
            await wait_state(ed, run_id, "proposed")
            result = ed.events(run_id, "tool_result")[-1]
            files = {f["path"]: f for f in ed.last_proposal(run_id)["files"]}
            await ed.command(protocol.CMD_REVIEW_REJECT, {"runId": run_id})
    assert result["name"] == "rename" and result["ok"], result
    assert files["pkg/use.py"]["newText"] == _renamed(USE_UNSAVED)
    assert sorted(files) == ["notes.txt", "pkg/calc.py", "pkg/use.py"]


async def test_rename_through_acp_reads_the_clients_buffer_of_every_file_it_edits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program("basedpyright")
    monkeypatch.setenv("DRIVEROS_STATE_DIR", str(tmp_path / "state"))
    root = _project(tmp_path / "ws")
    schema = Schema(install_sdk() / "schema" / "v1" / "schema.json")
    async with ScriptedModelServer([RENAME, Turn(text="Renamed.")]) as server:
        client = await start_agent(schema, env=acp_environ(server), cwd=root)
        asked: list[str] = []

        async def buffer(params: dict[str, Any]) -> dict[str, Any]:
            asked.append(params["path"])
            path = Path(params["path"])
            return {"content": USE_UNSAVED if path == root / "pkg/use.py" else path.read_text()}

        client.handlers["fs/read_text_file"] = buffer
        caps = {"fs": {"readTextFile": True, "writeTextFile": False}}
        await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": caps})
        new = await client.request("session/new", {"cwd": str(root), "mcpServers": []})
        prompt = [{"type": "text", "text": "rename compute_total"}]
        await client.request("session/prompt", {"sessionId": new["sessionId"], "prompt": prompt})
        assert await client.close() == 0
    assert client.errors == []
    assert str(root / "pkg/use.py") in asked  # a file the call does not name
    (done,) = [
        u
        for u in client.updates
        if u["sessionUpdate"] == "tool_call_update"
        and "rawOutput" in u
        and "output" in u["rawOutput"]
    ]
    # the lines of the editor's text: the import on line 5, the uses on lines 9 and 13
    assert "pkg/use.py: lines 5, 9, 13" in done["rawOutput"]["output"], done
    assert [(loc["path"], loc["line"]) for loc in done["locations"]][-3:] == [
        (str(root / "pkg/use.py"), 5),
        (str(root / "pkg/use.py"), 9),
        (str(root / "pkg/use.py"), 13),
    ]
