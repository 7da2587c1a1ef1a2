"""Issue 35 rows 4 and 6: ``driveros acp`` asks the editor (``fs/read_text_file``) only about
paths that pass the sandbox's checks: never a symbolic link (out of the workspace, to
``/dev/zero``, or as a directory on the way), ``.git``, a secret file, a FIFO. And a session
is refused at ``/``, the home directory and a directory holding it."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from ._client import DRIVEROS, Schema, start_agent
from .conftest import acp_environ, open_session

pytestmark = pytest.mark.e2e

FS = {"fs": {"readTextFile": True, "writeTextFile": True}}
#: Paths the model names that the editor must never be asked about.
REFUSED = ["leak.py", ".git/config", "pipe.py", "zero.py", "linked/mod.py", ".env"]


def plant(repo: Path, outside: Path) -> None:
    """Hostile paths in ``repo``; their targets in ``outside``."""
    outside.mkdir()
    (outside / "secret.py").write_text("TOKEN = 'outside'\n")
    (outside / "mod.py").write_text("M = 'outside'\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "leak.py").symlink_to(outside / "secret.py")
    os.mkfifo(repo / "pipe.py")
    (repo / "zero.py").symlink_to("/dev/zero")
    (repo / "linked").symlink_to(outside, target_is_directory=True)
    (repo / ".env").write_text("TOKEN=disk\n")


async def test_the_editor_is_asked_only_about_paths_the_sandbox_would_read(
    acp_schema: Schema, calc_repo: Path, tmp_path: Path
) -> None:
    plant(calc_repo, tmp_path / "outside")
    reads = [ToolCallSpec("read_file", {"path": p}) for p in [*REFUSED, "calc.py"]]
    async with ScriptedModelServer([Turn(tool_calls=reads), Turn(text="ok")]) as server:
        client, session = await open_session(acp_schema, server, calc_repo, capabilities=FS)
        asked: list[str] = []

        async def buffer(params: dict[str, Any]) -> dict[str, Any]:
            asked.append(params["path"])
            path = Path(params["path"])
            if path.is_fifo() or not path.is_file():  # an editor would hang or fail here
                raise RuntimeError(f"cannot open {path}")
            return {"content": path.read_text()}

        client.handlers["fs/read_text_file"] = buffer
        links = [
            {"type": "resource_link", "uri": (calc_repo / p).as_uri(), "name": p}
            for p in [*REFUSED, "test_calc.py"]
        ]
        prompt = [{"type": "text", "text": "read them"}, *links]
        result = await client.request("session/prompt", {"sessionId": session, "prompt": prompt})
        assert await client.close() == 0
    assert client.errors == []
    assert result["stopReason"] == "end_turn"
    # Only the two ordinary files were asked about; none of the planted paths.
    assert sorted(Path(p).name for p in asked) == ["calc.py", "test_calc.py"], asked
    assert all(Path(p).parent == calc_repo for p in asked)


@pytest.mark.parametrize("where", ["root", "home", "above home"])
async def test_a_session_at_a_non_project_root_is_refused(
    acp_schema: Schema, tmp_path: Path, where: str
) -> None:
    home = tmp_path / "users" / "me"
    (home / "project").mkdir(parents=True)
    cwd = {"root": Path("/"), "home": home, "above home": tmp_path / "users"}[where]
    async with ScriptedModelServer([Turn(text="never")]) as server:
        env = {**acp_environ(server), "HOME": str(home)}
        client = await start_agent(acp_schema, env=env, cwd=home / "project")
        await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": FS})
        with pytest.raises(RuntimeError) as refused:
            await client.request("session/new", {"cwd": str(cwd), "mcpServers": []})
        message = str(refused.value)
        assert "refusing a session in" in message and "open a project directory" in message
        # The project itself is fine, and the refusal ended nothing.
        ok = await client.request("session/new", {"cwd": str(home / "project"), "mcpServers": []})
        assert ok["sessionId"]
        assert await client.close() == 0
    assert server.requests == []


async def test_the_typescript_sdk_client_records_no_read_of_a_planted_path(
    acp_sdk: Path, calc_repo: Path, tmp_path: Path
) -> None:
    node = shutil.which("node")
    assert node is not None, "the ACP tests need node >= 20"
    plant(calc_repo, tmp_path / "outside")
    entry = acp_sdk / json.loads((acp_sdk / "package.json").read_text())["main"]
    reads = [ToolCallSpec("read_file", {"path": p}) for p in [*REFUSED, "calc.py"]]
    links = [{"type": "resource_link", "uri": (calc_repo / p).as_uri(), "name": p} for p in REFUSED]
    prompt = [{"type": "text", "text": "read them"}, *links]
    async with ScriptedModelServer([Turn(tool_calls=reads), Turn(text="ok")]) as server:
        proc = await asyncio.create_subprocess_exec(
            node,
            str(Path(__file__).resolve().parent / "ts_reads_client.mjs"),
            entry.as_uri(),
            str(DRIVEROS),
            str(calc_repo),
            json.dumps(prompt),
            env=acp_environ(server),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()[-3000:]
    summary = json.loads(out.decode().strip().splitlines()[-1])
    assert summary["stopReason"] == "end_turn" and summary["exit"] == 0
    assert summary["reads"] == [str(calc_repo / "calc.py")]
