"""ACP: a prompt's run records a checkpoint per turn that changed its copy (a ``sed`` through
``run`` included); ``/checkpoints`` lists them without a model request; the next prompt is the
follow-up: it sees the earlier conversation and the accepted state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from ._client import AcpClient, Schema
from .conftest import open_session
from .test_acp_stdio import FS, _prompt

pytestmark = pytest.mark.e2e

THREE_TURNS = [
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "plan.txt", "content": "plan\n"})]),
    Turn(tool_calls=[ToolCallSpec("run", {"command": "sed -i 's/a - b/a + b/' calc.py"})]),
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "extra.txt", "content": "more\n"})]),
    Turn(text="Done in three turns."),
]
FOLLOW_UP = [Turn(tool_calls=[ToolCallSpec("read_file", {"path": "plan.txt"})]), Turn(text="ok")]


async def _allow(params: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


async def _allowing_session(
    acp_schema: Schema, server: ScriptedModelServer, cwd: Path
) -> tuple[AcpClient, str]:
    """The agent started in ``cwd`` with ``server`` as its model, initialized, with one new
    session (its id) whose every permission request is allowed once."""
    client, session = await open_session(acp_schema, server, cwd)
    client.handlers["session/request_permission"] = _allow
    return client, session


async def _reply(client: AcpClient, session: str, text: str) -> str:
    """What the agent says to the prompt ``text``."""
    before = len(client.text())
    await client.request("session/prompt", _prompt(session, text))
    return client.text()[before:]


async def test_acp_checkpoints_command_and_follow_up(acp_schema: Schema, calc_repo: Path) -> None:
    async with ScriptedModelServer(THREE_TURNS + FOLLOW_UP) as server:
        client, session = await _allowing_session(acp_schema, server, calc_repo)
        await client.request("session/prompt", _prompt(session, "three steps"))
        asked = len(server.requests)
        listing = await _reply(client, session, "/checkpoints")
        assert len(server.requests) == asked  # answered without the model
        await client.request("session/prompt", _prompt(session, "now check the plan"))
        follow = server.requests[asked]
        reread = str(server.requests[asked + 1]["messages"][-1])
        assert await client.close() == 0
    assert client.errors == []
    assert listing.splitlines() == [
        "Checkpoints of the last prompt (3):",
        "1. turn 1: plan.txt",
        "2. turn 2: calc.py",
        "3. turn 3: extra.txt",
    ]
    assert "three steps" in str(follow) and "now check the plan" in str(follow)
    assert "plan" in reread  # the follow-up's run sees the accepted state
    assert (calc_repo / "calc.py").read_text().endswith("a + b\n")  # the shell edit, accepted


async def test_acp_revert_drops_the_later_checkpoints_and_undoes_what_they_wrote(
    acp_schema: Schema, calc_repo: Path
) -> None:
    """Three turns' edits are allowed and written; ``/revert 1`` takes the shell edit and the
    third turn's new file back out of the user's files, keeps the first turn's, and answers
    with the checkpoint that is left; a bad N is a plain message; no model request is made."""
    original = (calc_repo / "calc.py").read_text()
    async with ScriptedModelServer(THREE_TURNS) as server:
        client, session = await _allowing_session(acp_schema, server, calc_repo)
        await client.request("session/prompt", _prompt(session, "three steps"))
        assert (calc_repo / "extra.txt").exists()
        told = [u for u in client.updates if u["sessionUpdate"] == "available_commands_update"]
        # the prompt left checkpoints: the session's own commands are told (no custom ones)
        assert [[c["name"] for c in u["availableCommands"]] for u in told] == [
            ["checkpoints", "revert"]
        ]
        asked = len(server.requests)
        replies: list[str] = []
        for text in ("/revert x", "/revert 7", "/revert 1", "/checkpoints", "/revert 1"):
            replies.append(await _reply(client, session, text))
        assert len(server.requests) == asked  # answered without the model
        assert await client.close() == 0
    assert client.errors == []
    usage, unknown, reverted, listing, again = replies
    assert usage.startswith("Usage: /revert N")
    assert unknown.startswith("No checkpoint 7 in the last prompt (checkpoints: 1, 2, 3).")
    assert reverted.splitlines() == [
        "Reverted to checkpoint 1.",
        "Restored: calc.py",
        "Removed: extra.txt",
        "Checkpoints of the last prompt (1):",
        "1. turn 1: plan.txt",
    ]
    assert listing.splitlines() == ["Checkpoints of the last prompt (1):", "1. turn 1: plan.txt"]
    assert again.startswith("Nothing after checkpoint 1.")
    assert (calc_repo / "calc.py").read_text() == original
    assert not (calc_repo / "extra.txt").exists()
    assert (calc_repo / "plan.txt").read_text() == "plan\n"


async def test_acp_revert_leaves_a_file_the_user_changed_since(
    acp_schema: Schema, calc_repo: Path
) -> None:
    async with ScriptedModelServer(THREE_TURNS) as server:
        client, session = await _allowing_session(acp_schema, server, calc_repo)
        await client.request("session/prompt", _prompt(session, "three steps"))
        (calc_repo / "extra.txt").write_text("mine now\n")
        reply = await _reply(client, session, "/revert 0")
        assert await client.close() == 0
    assert client.errors == []
    assert "Left as it is: extra.txt (changed since the run wrote it)" in reply.splitlines()
    assert "Removed: plan.txt" in reply.splitlines()
    assert (calc_repo / "extra.txt").read_text() == "mine now\n"
    assert not (calc_repo / "plan.txt").exists()
    assert "a - b" in (calc_repo / "calc.py").read_text()
    assert reply.splitlines()[-1].startswith("No checkpoints")


async def _editor_session(
    acp_schema: Schema, server: ScriptedModelServer, cwd: Path, writes: list[tuple[str, str]]
) -> tuple[AcpClient, str]:
    """As :func:`_allowing_session`, for a client with ``fs`` that reads and saves files as an
    editor does (following a symbolic link, as opening one in an editor does); each write is
    recorded in ``writes``."""
    client, session = await open_session(acp_schema, server, cwd, capabilities=FS)

    async def read(params: dict[str, Any]) -> dict[str, Any]:
        return {"content": Path(params["path"]).read_text()}

    async def write(params: dict[str, Any]) -> dict[str, Any]:  # an editor that saves
        writes.append((params["path"], params["content"]))
        Path(params["path"]).write_text(params["content"])
        return {}

    client.handlers.update(
        {
            "session/request_permission": _allow,
            "fs/read_text_file": read,
            "fs/write_text_file": write,
        }
    )
    return client, session


async def test_acp_revert_goes_through_the_clients_files_as_edits_do(
    acp_schema: Schema, calc_repo: Path
) -> None:
    """A client with ``fs``: the run's edits were written through it, and so is the revert
    of a modified file (read and written through ``fs/*_text_file``); a created file is
    removed on disk."""
    original = (calc_repo / "calc.py").read_text()
    writes: list[tuple[str, str]] = []
    async with ScriptedModelServer(THREE_TURNS) as server:
        client, session = await _editor_session(acp_schema, server, calc_repo, writes)
        await client.request("session/prompt", _prompt(session, "three steps"))
        written = len(writes)
        reply = await _reply(client, session, "/revert 1")
        assert await client.close() == 0
    assert client.errors == []
    assert writes[written:] == [(str(calc_repo / "calc.py"), original)]
    assert reply.splitlines()[:3] == [
        "Reverted to checkpoint 1.",
        "Restored: calc.py",
        "Removed: extra.txt",
    ]
    assert not (calc_repo / "extra.txt").exists()
    assert (calc_repo / "calc.py").read_text() == original


async def test_acp_revert_never_writes_through_a_planted_link(
    acp_schema: Schema, calc_repo: Path, tmp_path: Path
) -> None:
    """The attacker: a cloned workspace holds ``notes.txt``, a symbolic link to a file outside
    it whose text is known; a prompt-injected model makes ``notes.txt`` a file of its own at
    checkpoint 1 and the outside file's text at checkpoint 2. ``/revert 1`` finds "the run's
    version" behind the link when it reads through an editor that follows it, but writes
    nothing through the link (not through the client, not on disk) and says why."""
    outside = tmp_path / "outside.txt"
    outside.write_text("known\n")
    (calc_repo / "notes.txt").symlink_to(outside)
    turns = [
        Turn(tool_calls=[ToolCallSpec("run", {"command": "rm notes.txt && echo A > notes.txt"})]),
        Turn(tool_calls=[ToolCallSpec("run", {"command": "echo known > notes.txt"})]),
        Turn(text="Done."),
    ]
    writes: list[tuple[str, str]] = []
    async with ScriptedModelServer(turns) as server:
        client, session = await _editor_session(acp_schema, server, calc_repo, writes)
        await client.request("session/prompt", _prompt(session, "two steps"))
        written = len(writes)
        reply = await _reply(client, session, "/revert 1")
        assert await client.close() == 0
    assert client.errors == []
    assert writes[written:] == []
    assert outside.read_text() == "known\n"
    assert (calc_repo / "notes.txt").is_symlink()
    assert reply.splitlines()[:2] == [
        "Reverted to checkpoint 1.",
        "Left as it is: notes.txt (a symbolic link in the workspace; driveros never writes "
        "through one)",
    ]


async def test_acp_revert_touches_no_file_the_proposal_left_unchanged(
    acp_schema: Schema, calc_repo: Path
) -> None:
    """The attacker: a prompt-injected model breaks the user's ``calc.py`` at checkpoint 1 and
    mends it at checkpoint 2, so the proposal shows only ``extra.txt``. ``/revert 1`` undoes
    only what the run wrote into the user's files: ``extra.txt`` goes, and ``calc.py`` (never
    proposed, never written) does not get checkpoint 1's broken version; it is named."""
    original = (calc_repo / "calc.py").read_text()
    turns = [
        Turn(tool_calls=[ToolCallSpec("run", {"command": "sed -i 's/a - b/a * b/' calc.py"})]),
        Turn(
            tool_calls=[
                ToolCallSpec("run", {"command": "sed -i 's/a [*] b/a - b/' calc.py"}),
                ToolCallSpec("write_file", {"path": "extra.txt", "content": "more\n"}),
            ]
        ),
        Turn(text="Done."),
    ]
    async with ScriptedModelServer(turns) as server:
        client, session = await _allowing_session(acp_schema, server, calc_repo)
        await client.request("session/prompt", _prompt(session, "two steps"))
        assert (calc_repo / "extra.txt").exists()
        reply = await _reply(client, session, "/revert 1")
        assert await client.close() == 0
    assert client.errors == []
    assert (calc_repo / "calc.py").read_text() == original
    assert not (calc_repo / "extra.txt").exists()
    assert reply.splitlines()[:3] == [
        "Reverted to checkpoint 1.",
        "Removed: extra.txt",
        "Left as it is: calc.py (not in the run's proposal: never written to your files)",
    ]
