"""Issue 35 row 6, variations: ``driveros acp`` refuses a session whose ``cwd`` is no project
but a root holding many: another account's home or a directory holding one (``/home`` when
driveros runs as root), a top-level system directory (``/tmp``, ``/usr``, ``/var``), the home
directory reached through a symlink or with a trailing slash. The project itself is fine."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from driveros.testing import ScriptedModelServer, Turn
from tests.acp._client import AcpClient, Schema, start_agent
from tests.acp.conftest import acp_environ
from tests.acp.conftest import acp_schema as acp_schema  # the fixture
from tests.acp.conftest import acp_sdk as acp_sdk  # the fixture

pytestmark = pytest.mark.e2e

FS = {"fs": {"readTextFile": True, "writeTextFile": True}}


def _other_home() -> Path | None:
    """Another person's (uid >= 1000) existing home directory, not holding or beside ours."""
    mine = Path(os.path.realpath(Path.home()))
    for entry in pwd.getpwall():
        home = Path(os.path.realpath(entry.pw_dir))
        if entry.pw_uid < 1000 or entry.pw_uid == 65534 or not home.is_dir():
            continue
        if home != mine and home.parent != mine.parent and home not in mine.parents:
            return home
    return None


async def _refused(client: AcpClient, cwd: str) -> str:
    with pytest.raises(RuntimeError) as refused:
        await client.request("session/new", {"cwd": cwd, "mcpServers": []})
    return str(refused.value)


@pytest.mark.parametrize("where", ["other_home", "holds_other_home", "tmp", "usr", "var"])
async def test_a_session_at_a_shared_root_is_refused(
    acp_schema: Schema, tmp_path: Path, where: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    other = _other_home()
    if where in ("other_home", "holds_other_home") and other is None:
        pytest.skip("no other account has a home directory outside this user's home's parent")
    cwd = {
        "other_home": str(other),
        "holds_other_home": str(other.parent) if other else "",
        "tmp": "/tmp",
        "usr": "/usr",
        "var": "/var",
    }[where]
    async with ScriptedModelServer([Turn(text="never")]) as server:
        client = await start_agent(acp_schema, env=acp_environ(server), cwd=project)
        await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": FS})
        message = await _refused(client, cwd)
        assert "refusing a session in" in message and "open a project directory" in message
        ok = await client.request("session/new", {"cwd": str(project), "mcpServers": []})
        assert ok["sessionId"]
        assert await client.close() == 0
    assert server.requests == []


@pytest.mark.parametrize("how", ["symlink", "trailing_slash", "dot_dot"])
async def test_the_home_directory_however_spelled_is_refused(
    acp_schema: Schema, tmp_path: Path, how: str
) -> None:
    home = tmp_path / "users" / "me"
    (home / "project").mkdir(parents=True)
    link = tmp_path / "link-to-home"
    link.symlink_to(home, target_is_directory=True)
    cwd = {
        "symlink": str(link),
        "trailing_slash": f"{home}/",
        "dot_dot": f"{home}/project/..",
    }[how]
    async with ScriptedModelServer([Turn(text="never")]) as server:
        env = {**acp_environ(server), "HOME": str(home)}
        client = await start_agent(acp_schema, env=env, cwd=home / "project")
        await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": FS})
        message = await _refused(client, cwd)
        assert "it is the home directory" in message
        assert await client.close() == 0
    assert server.requests == []
