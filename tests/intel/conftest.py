"""Live-tool fixtures: a LocalSandbox over a project written to tmp_path."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest

from driveros.sandbox import LocalSandbox
from tests.intel._projects import tool_env, which, write_project

OpenProject = Callable[[Mapping[str, str]], AbstractAsyncContextManager[LocalSandbox]]


@pytest.fixture
def open_project(tmp_path: Path) -> OpenProject:
    """``async with open_project(files) as sandbox``: the project, live, with our venv's tools."""

    @asynccontextmanager
    async def opener(files: Mapping[str, str]) -> AsyncIterator[LocalSandbox]:
        root = write_project(tmp_path / "ws", files)
        async with LocalSandbox(root, base_env=tool_env()) as sandbox:
            yield sandbox

    return opener


def require_tool(name: str) -> None:
    """Skip, naming the reason, when a toolchain is not installed here."""
    if which(name, tool_env()) is None:
        pytest.skip(f"{name} is not installed in this environment")


def require_docker_image(image: str = "driveros-sandbox:latest") -> None:
    """Skip, naming the reason, when the docker tier cannot run here."""
    import docker
    from docker.errors import DockerException

    try:
        client = docker.from_env()
    except DockerException as exc:
        pytest.skip(f"no Docker daemon answers: {exc}")
    try:
        client.api.inspect_image(image)
    except DockerException as exc:
        pytest.skip(f"the sandbox image {image} is not usable (make sandbox-image): {exc}")
    finally:
        client.close()
