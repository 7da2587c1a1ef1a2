"""A docker run's language servers end with it: `driveros agent --sandbox docker` ending
normally, stopped (SIGTERM) or killed (SIGKILL) while its warm basedpyright runs in the
container leaves no container (and so no server) behind."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest
from tests.cli.conftest import calc_repo as calc_repo  # the fixture, for these tests
from tests.cli.conftest import cli_environ, start_cli
from tests.sandbox.conftest import require_docker
from tests.semantic._oracle import program

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

pytestmark = pytest.mark.docker

HOVER = Turn(tool_calls=[ToolCallSpec("hover", {"symbol": "add"})])


def _containers(workspace: Path) -> dict[str, list[str]]:
    """The containers that mount ``workspace``, by id, with the command lines running in
    each."""
    import docker

    client = docker.from_env()
    try:
        found = {}
        for c in client.api.containers(all=True):
            if any(m.get("Source") == str(workspace) for m in c.get("Mounts") or []):
                try:
                    top = client.api.top(c["Id"], ps_args="-eo pid,args")
                    found[c["Id"]] = [row[-1] for row in top.get("Processes") or []]
                except docker.errors.APIError:  # not running (being removed)
                    found[c["Id"]] = []
        return found
    finally:
        client.close()


@pytest.mark.parametrize("sig", [None, "SIGTERM", "SIGKILL"])
async def test_semantic_docker_servers_end_with_the_cli_run(
    calc_repo: Path, sig: str | None
) -> None:
    require_docker()
    program("basedpyright")
    turns = [HOVER, Turn(text="stalled", delay_s=600) if sig else Turn(text="done")]
    async with ScriptedModelServer(turns) as model:
        env = cli_environ(model)
        proc = await start_cli(
            "--task", "look", "--sandbox", "docker", "--format", "json", env=env, cwd=calc_repo
        )
        if sig is not None:
            async with asyncio.timeout(120):
                while len(model.requests) < 2:  # the hover answered: the server is warm
                    await asyncio.sleep(0.05)
            running = [a for args in _containers(calc_repo).values() for a in args]
            assert any("langserver" in a for a in running), running
            proc.send_signal(getattr(signal, sig))
        async with asyncio.timeout(120):
            out, err = await proc.communicate()
    assert proc.returncode == {None: 0, "SIGTERM": 7, "SIGKILL": -9}[sig], err
    if sig is None:
        assert b'"outcome": "answered"' in out or b'"outcome":"answered"' in out, out
    async with asyncio.timeout(120):  # after SIGKILL the watchdog removes the container
        while _containers(calc_repo):
            await asyncio.sleep(0.2)
    assert _containers(calc_repo) == {}
