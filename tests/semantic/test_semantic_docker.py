"""The docker tier: the image carries no language server, so every semantic tool answers that
the server is missing there and what to install, and the run goes on (docs/cli.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.sandbox.conftest import require_docker

from driveros.agent._tools import ToolBox
from driveros.sandbox import DockerSandbox

pytestmark = pytest.mark.docker


async def test_semantic_docker_says_the_server_is_missing(tmp_path: Path) -> None:
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("def f():\n    return 1\n")
    async with DockerSandbox(ws) as sandbox:
        box = ToolBox(sandbox)
        outcome = await box.call("references", {"path": "a.py", "line": 1, "column": 5}, None)
        assert not outcome.ok
        assert "basedpyright (`basedpyright-langserver`) is not installed where the docker" in (
            outcome.output
        )
        assert "pip install basedpyright" in outcome.output
        again = await box.call("read_file", {"path": "a.py"}, None)
        assert again.ok
