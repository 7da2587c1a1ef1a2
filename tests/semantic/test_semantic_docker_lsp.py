"""The semantic tools through the language server in the docker tier (`driveros-lsp` with the
editor's `sandbox: docker` setting): a rename is the run's proposal, exactly the server's
edit, answered by basedpyright in the run's container."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.sandbox.conftest import require_docker
from tests.semantic._oracle import program
from tests.semantic.test_semantic_run import TURNS, project, server_rename
from tests.server._lsp import editor_session
from tests.server.conftest import model_env
from tests.server.test_flow import SETTINGS, wait_state

from driveros.testing import ScriptedModelServer
from driveros_lsp import protocol

pytestmark = pytest.mark.docker


async def test_semantic_docker_rename_in_an_editors_run_is_its_proposal(tmp_path: Path) -> None:
    require_docker()
    program("basedpyright")
    root = project(tmp_path / "ws")
    want = await server_rename(root)
    settings = {**SETTINGS, "sandbox": "docker"}
    async with ScriptedModelServer(TURNS) as model:
        env = {**model_env(model), "DRIVEROS_STATE_DIR": str(tmp_path / "state")}
        async with editor_session(root, profile="neovim", env=env, settings=settings) as ed:
            run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "rename"}))["runId"]
            await wait_state(ed, run_id, "proposed")
            (started,) = ed.events(run_id, "run_started")
            results = {e["name"]: e for e in ed.events(run_id, "tool_result")}
            proposal = ed.last_proposal(run_id)
            await ed.command(protocol.CMD_REVIEW_REJECT, {"runId": run_id})
    assert started["sandbox"].startswith("docker"), started
    assert results["rename"]["ok"], results["rename"]
    assert results["references"]["output"].startswith("5 references to grand_total in 3 files")
    assert proposal is not None
    assert sorted(f["path"] for f in proposal["files"]) == sorted(want)
    assert (root / "pkg/calc.py").read_text().startswith("def compute_total")
