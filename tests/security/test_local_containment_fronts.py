"""Issue 27 row 1 through driveros-lsp and ``driveros acp``: a model-written conftest run
by pytest on the local tier reaches nothing outside its sandbox.

The editor run (a scratch view, network off) is contained: pytest runs unasked, its report
reaches the model, and the attacker, the directory outside and the user's tree see nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from driveros.testing import ToolCallSpec, Turn
from driveros_lsp import protocol
from tests._scripted import calc_repo as calc_repo  # the fixture
from tests.acp.conftest import acp_schema as acp_schema  # the fixtures
from tests.acp.conftest import acp_sdk as acp_sdk
from tests.security._containment import Attacker, hostile_conftest
from tests.server._lsp import editor_session
from tests.server.conftest import model_env
from tests.server.conftest import scripted_model as scripted_model  # the fixture

PYTEST = ToolCallSpec("run", {"command": "python3 -m pytest -q -p no:cacheprovider"})
SETTINGS = {"provider": "openai", "model": "scripted-model"}


def _turns(outside: Path, url: str) -> list[Turn]:
    conftest = hostile_conftest(outside=outside, url=url)
    write = ToolCallSpec("write_file", {"path": "conftest.py", "content": conftest})
    return [Turn(tool_calls=[write]), Turn(tool_calls=[PYTEST]), Turn(text="done")]


def _tree(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}


async def test_containment_through_the_language_server(
    calc_repo: Path, tmp_path: Path, scripted_model: Any
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    before = _tree(calc_repo)
    with Attacker().running() as attacker:
        async with (
            scripted_model(_turns(outside, attacker.url)) as model,
            editor_session(
                calc_repo, profile="vscode", env=model_env(model), settings=SETTINGS
            ) as ed,
        ):
            started = await ed.command(protocol.CMD_AGENT_START, {"task": "run the tests"})
            run_id = str(started["runId"])
            await ed.wait_for(lambda: ed.events(run_id, "result"), what="the result")
            approvals = ed.events(run_id, "approval")
            told = json.dumps(model.requests[-1]["messages"])
    assert all(not a["asked"] for a in approvals)  # contained: nothing was asked
    assert "passed" in told or "failed" in told  # pytest ran and reported
    assert attacker.requests == []
    assert list(outside.iterdir()) == []
    assert "test-key" not in told.replace("test-key-", "")  # the server's key never leaked
    assert (calc_repo / "calc.py").read_bytes() == before["calc.py"]  # no lowerdir write


@pytest.mark.e2e
async def test_containment_through_acp(calc_repo: Path, tmp_path: Path, acp_schema: Any) -> None:
    from driveros.testing import ScriptedModelServer
    from tests.acp._client import start_agent
    from tests.acp.conftest import acp_environ

    outside = tmp_path / "outside"
    outside.mkdir()
    with Attacker().running() as attacker:
        async with ScriptedModelServer(_turns(outside, attacker.url)) as server:
            client = await start_agent(acp_schema, env=acp_environ(server), cwd=calc_repo)

            async def allow(params: dict[str, Any]) -> dict[str, Any]:
                options = params["options"]
                chosen = next(o for o in options if o["kind"].startswith("allow"))
                return {"outcome": {"outcome": "selected", "optionId": chosen["optionId"]}}

            client.handlers["session/request_permission"] = allow
            caps = {"fs": {"readTextFile": False, "writeTextFile": False}}
            await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": caps})
            new = await client.request("session/new", {"cwd": str(calc_repo), "mcpServers": []})
            prompt = [{"type": "text", "text": "run the tests"}]
            await client.request(
                "session/prompt", {"sessionId": new["sessionId"], "prompt": prompt}
            )
            assert await client.close() == 0
            told = json.dumps(server.requests[-1]["messages"])
    assert "passed" in told or "failed" in told  # pytest ran and reported
    assert attacker.requests == []
    assert list(outside.iterdir()) == []
    assert "test-key-acp" not in told


DIAGNOSTICS = ToolCallSpec("diagnostics", {})


async def test_containment_of_the_feed_through_the_language_server_read_only(
    calc_repo: Path, tmp_path: Path, scripted_model: Any
) -> None:
    """Row 3 in the editor: the repository ships the conftest, approval is ``never`` and the
    model only asks for ``diagnostics``: the feed's pytest imports it, contained."""
    outside = tmp_path / "outside"
    outside.mkdir()
    with Attacker().running() as attacker:
        (calc_repo / "conftest.py").write_text(hostile_conftest(outside=outside, url=attacker.url))
        before = _tree(calc_repo)
        turns = [Turn(tool_calls=[DIAGNOSTICS]), Turn(text="done")]
        async with (
            scripted_model(turns) as model,
            editor_session(
                calc_repo,
                profile="vscode",
                env=model_env(model),
                settings={**SETTINGS, "approval": "never"},
            ) as ed,
        ):
            started = await ed.command(protocol.CMD_AGENT_START, {"task": "check the build"})
            run_id = str(started["runId"])
            await ed.wait_for(lambda: ed.events(run_id, "result"), what="the result")
            results = ed.events(run_id, "tool_result")
    assert [r["name"] for r in results] == ["diagnostics"]
    assert attacker.requests == []
    assert list(outside.iterdir()) == []
    # the user's files are as they were (what the tests wrote in the run's copy is only a
    # proposal: the test editor applies proposals, so conftest_ran.txt may arrive that way)
    after = _tree(calc_repo)
    assert {name: after.get(name) for name in before} == before


@pytest.mark.e2e
async def test_containment_of_the_feed_through_acp_read_only(
    calc_repo: Path, tmp_path: Path, acp_schema: Any
) -> None:
    """Row 3 through ACP's ``read-only`` mode (approval ``never``): the feed runs the
    repository's conftest inside the sandbox only."""
    from driveros.testing import ScriptedModelServer
    from tests.acp._client import start_agent
    from tests.acp.conftest import acp_environ

    outside = tmp_path / "outside"
    outside.mkdir()
    with Attacker().running() as attacker:
        (calc_repo / "conftest.py").write_text(hostile_conftest(outside=outside, url=attacker.url))
        before = _tree(calc_repo)
        turns = [Turn(tool_calls=[DIAGNOSTICS]), Turn(text="done")]
        async with ScriptedModelServer(turns) as server:
            env = {**acp_environ(server), "DRIVEROS_DIAGNOSTICS": "on"}
            client = await start_agent(acp_schema, env=env, cwd=calc_repo)
            await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            new = await client.request("session/new", {"cwd": str(calc_repo), "mcpServers": []})
            await client.request(
                "session/set_mode", {"sessionId": new["sessionId"], "modeId": "read-only"}
            )
            prompt = [{"type": "text", "text": "check the build"}]
            await client.request(
                "session/prompt", {"sessionId": new["sessionId"], "prompt": prompt}
            )
            assert await client.close() == 0
            told = json.dumps(server.requests[-1]["messages"])
    assert "diagnostics" in told
    assert attacker.requests == []
    assert list(outside.iterdir()) == []
    assert "test-key-acp" not in told
    assert _tree(calc_repo) == before
