"""The feed inside a DockerSandbox: the same checks, paths as the container sees them."""

from __future__ import annotations

from pathlib import Path

import pytest

from driveros.intel import DiagnosticsFeed
from driveros.sandbox import DockerSandbox
from tests.intel import _projects as P
from tests.intel.conftest import require_docker_image

pytestmark = pytest.mark.docker


async def test_feed_in_docker_uses_the_containers_tools(tmp_path: Path) -> None:
    require_docker_image()
    files = {**P.PYTHON_SYNTAX, "ok.py": "x = 1\n", "go.mod": "module example.com/x\n"}
    root = P.write_project(tmp_path / "ws", files)
    async with DockerSandbox(root) as sandbox:
        feed = DiagnosticsFeed(sandbox)
        snap = await feed.snapshot()
        # the image has python3 but no ruff, mypy or go: compileall is the floor
        assert snap.checks == ("compileall",)
        assert [(i.path, i.line, i.code) for i in snap.items] == [("broken.py", 1, "SyntaxError")]
        await sandbox.write_file("broken.py", "def f():\n    pass\n")
        fixed = await feed.snapshot(changed=["broken.py"])
        assert fixed.items == ()
        assert [(r.name, r.mode, r.files) for r in feed.runs] == [
            ("compileall", "files", ("broken.py",))
        ]
    assert not any(p.name == "__pycache__" for p in root.rglob("*"))
