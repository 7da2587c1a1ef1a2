"""``driveros agent --sandbox docker``: the same run with every tool inside a container."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests._scripted import FIX_CALC

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from .conftest import run_cli

pytestmark = pytest.mark.docker

IMAGE = "driveros-sandbox:latest"


def _docker_problem() -> str | None:
    import docker
    from docker.errors import DockerException, ImageNotFound

    try:
        client = docker.from_env()
    except DockerException as exc:
        return f"no Docker daemon answers: {exc}"
    try:
        client.api.inspect_image(IMAGE)
    except ImageNotFound:
        return f"the sandbox image {IMAGE} is missing (run `make sandbox-image`)"
    except DockerException as exc:
        return f"no Docker daemon answers: {exc}"
    finally:
        client.close()
    return None


@pytest.fixture
def docker_ready() -> None:
    problem = _docker_problem()
    if problem is not None:
        if os.environ.get("DRIVEROS_REQUIRE_DOCKER") == "1":
            pytest.fail(f"DRIVEROS_REQUIRE_DOCKER=1 but {problem}")
        pytest.skip(problem)


async def test_cli_docker_sandbox_runs_the_tools_in_a_container(
    calc_repo: Path, docker_ready: None
) -> None:
    if os.geteuid() == 0:  # the container user is not root: hand it the workspace
        for path in [calc_repo, *calc_repo.rglob("*")]:
            os.chown(path, 1000, 1000)
    turns = [
        Turn(tool_calls=[FIX_CALC]),
        Turn(tool_calls=[ToolCallSpec("run", {"command": "cat calc.py; pwd"})]),
        Turn(text="Fixed inside the container."),
    ]
    async with ScriptedModelServer(turns) as server:
        run = await run_cli(
            "--task",
            "fix add",
            "--sandbox",
            "docker",
            "--format",
            "ndjson",
            server=server,
            cwd=calc_repo,
        )
    assert run.code == 0, run.stderr
    assert (calc_repo / "calc.py").read_text().endswith("a + b\n")
    assert '"sandbox":"docker' in run.stdout
    assert "return a + b\\n/workspace" in run.stdout
