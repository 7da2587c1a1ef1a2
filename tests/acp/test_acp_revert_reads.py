"""ACP ``/revert N`` when the client's ``fs/read_text_file`` fails on a file: the disk counts,
and a file the disk cannot give as text either is left as it is and named (the session goes
on; no error reaches the client)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from ._client import Schema
from .conftest import open_session
from .test_acp_stdio import _prompt

pytestmark = pytest.mark.e2e

TWO_TURNS = [
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "data.txt", "content": "v1\n"})]),
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "data.txt", "content": "v2\n"})]),
    Turn(text="Done."),
]


async def test_acp_revert_names_a_file_neither_the_client_nor_the_disk_gives_as_text(
    acp_schema: Schema, calc_repo: Path
) -> None:
    async with ScriptedModelServer(TWO_TURNS) as server:
        caps = {"fs": {"readTextFile": True, "writeTextFile": False}}
        client, session = await open_session(acp_schema, server, calc_repo, capabilities=caps)

        async def allow(params: dict[str, Any]) -> dict[str, Any]:
            return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

        async def read(params: dict[str, Any]) -> dict[str, Any]:
            raise RuntimeError("the editor cannot open it")

        client.handlers.update({"session/request_permission": allow, "fs/read_text_file": read})
        await client.request("session/prompt", _prompt(session, "two steps"))
        assert (calc_repo / "data.txt").read_text() == "v2\n"
        (calc_repo / "data.txt").write_bytes(b"\xff\xfe not text\n")  # the user's, now
        before = len(client.text())
        await client.request("session/prompt", _prompt(session, "/revert 1"))
        reply = client.text()[before:]
        assert await client.close() == 0
    assert client.errors == []
    lines = reply.splitlines()
    assert lines[0] == "Reverted to checkpoint 1."
    assert lines[1].startswith("Left as it is: data.txt (cannot read it: ")
    assert (calc_repo / "data.txt").read_bytes() == b"\xff\xfe not text\n"
