"""Issue 13 row 9: a committed symlink ``shared -> ../outside`` that the agent replaces with a
directory and a file. Accepting that file, or the whole proposal, from the editor must never
write through the link: both are conflicts (kept in the proposal), never an internal error."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from driveros_lsp import protocol
from tests.server._lsp import editor_session
from tests.server.conftest import private_state as private_state  # isolated state (autouse)
from tests.server.test_flow import wait_state

SETTINGS = {"provider": "openai", "model": "scripted-model"}
# A hostile model: a test hook that swaps the link for a directory, run by an allowed command.
REPLACE_LINK = (
    "import os\n"
    "if os.path.islink('shared'):\n"
    "    os.unlink('shared')\n"
    "    os.mkdir('shared')\n"
    "    with open('shared/evil.txt', 'w') as fh:\n"
    "        fh.write('planted\\n')\n"
)
TURNS = [
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "conftest.py", "content": REPLACE_LINK})]),
    Turn(tool_calls=[ToolCallSpec("run", {"command": "python -m pytest -q -p no:cacheprovider"})]),
    Turn(text="shared is a directory now"),
]


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    return done.stdout.decode()


def _uri(change: object) -> str:
    document = getattr(change, "text_document", None)
    return str(document.uri if document is not None else getattr(change, "uri", change))


def _hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("the user's other project\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("hello\n")
    (ws / "shared").symlink_to("../outside")
    _git(ws, "init", "-q")
    _git(ws, "add", ".")
    _git(ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    return ws, outside


@pytest.mark.parametrize("accept", ["the file", "everything"])
async def test_lsp_symlink_edit_is_a_conflict_never_a_write_outside(
    tmp_path: Path, accept: str
) -> None:
    ws, outside = _hostile_repo(tmp_path)
    async with (
        ScriptedModelServer(TURNS) as model,
        editor_session(
            ws,
            profile="neovim",
            env={"OPENAI_BASE_URL": model.openai_base_url, "OPENAI_API_KEY": "k"},
            settings=SETTINGS,
        ) as ed,
    ):
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "make shared a dir"}))[
            "runId"
        ]
        await wait_state(ed, run_id, "proposed", "finished", "failed")
        listing = await ed.command(protocol.CMD_AGENT_LIST)
        (run,) = listing["runs"]
        results = [e.get("output") or e for e in ed.events(run_id, "tool_result")]
        assert run["state"] == "proposed", results
        assert "shared/evil.txt" in run["files"], run
        paths = ["shared/evil.txt"] if accept == "the file" else None
        try:
            answer = await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id, "paths": paths})
        except JsonRpcException as exc:  # pragma: no cover - the bug this test guards
            pytest.fail(f"accept failed with {exc.code}: {exc.message}")
        # only the hook file itself may be applied; nothing under the link is in any edit
        assert set(answer["applying"]) <= {"conftest.py"}
        assert "shared/evil.txt" in answer["conflicts"]
        assert "symbolic link" in answer["conflicts"]["shared/evil.txt"]
        if accept == "everything":
            await wait_state(ed, run_id, "proposed")
            await ed.wait_for(lambda: ed.edits, what="the edit of conftest.py")
        sent = {_uri(c) for e in ed.edits for c in e.edit.document_changes or []}
        assert sent <= {ed.uri("conftest.py")}, sent
        listing = await ed.command(protocol.CMD_AGENT_LIST)
        (run,) = listing["runs"]
        assert run["state"] == "proposed" and "shared/evil.txt" in run["conflicts"]
        assert "shared/evil.txt" in run["files"]
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert (ws / "shared").is_symlink()
    assert _git(ws, "status", "--porcelain") in ("", "?? conftest.py\n")
