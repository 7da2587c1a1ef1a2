"""DockerSandbox against the real daemon: one container for the module, a few of their own."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from driveros.sandbox import (
    DockerSandbox,
    NotFoundError,
    PathEscapeError,
    RuntimeMissingError,
    Sandbox,
    SandboxClosedError,
)
from tests.sandbox.conftest import (
    SANDBOX_UID,
    daemon_runtimes,
    labelled_containers,
    make_workspace,
    require_docker,
)

pytestmark = [pytest.mark.docker, pytest.mark.asyncio(loop_scope="module")]

SECRETS = {
    "OPENAI_API_KEY": "sk-docker-secret",
    "GH_TOKEN": "ghp-docker",
    "CI": "kept",
    "NOT_ALLOWLISTED": "dropped",
}


@pytest.fixture(scope="module")
def docker_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_docker()
    return make_workspace(tmp_path_factory.mktemp("docker") / "ws")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def box(docker_ws: Path) -> AsyncIterator[DockerSandbox]:
    async with DockerSandbox(docker_ws, base_env=SECRETS, output_cap=65536) as sandbox:
        yield sandbox


async def in_container(box: DockerSandbox, command: str) -> str:
    result = await box.run(command)
    assert result.exit_code == 0, result
    return result.stdout


async def test_docker_is_a_sandbox_with_its_tier(box: DockerSandbox, docker_ws: Path) -> None:
    assert isinstance(box, Sandbox)
    assert box.tier == "docker-runc"
    assert box.workspace == docker_ws.resolve()
    assert box.container_id in labelled_containers()


async def test_docker_runs_as_workspace_owner_and_files_stay_theirs(
    box: DockerSandbox, docker_ws: Path
) -> None:
    assert (await in_container(box, "id -u; id -g")).split() == [str(SANDBOX_UID)] * 2
    await in_container(box, "mkdir -p owned && echo made > owned/by-container.txt")
    made = docker_ws / "owned" / "by-container.txt"
    assert (made.stat().st_uid, made.stat().st_gid) == (SANDBOX_UID, SANDBOX_UID)
    await box.write_file("owned/by-host.txt", "host\n")
    written = docker_ws / "owned" / "by-host.txt"
    if os.geteuid() == 0:  # a root host process hands new files to the directory's owner
        assert written.stat().st_uid == SANDBOX_UID
    assert await in_container(box, "cat owned/by-host.txt") == "host\n"


async def test_docker_run_streams_exit_code_stdin_and_cwd(box: DockerSandbox) -> None:
    result = await box.run("echo out; echo err >&2; exit 5")
    assert (result.stdout, result.stderr, result.exit_code) == ("out\n", "err\n", 5)
    assert (await box.run("tr a-z A-Z", stdin=b"quiet")).stdout == "QUIET"
    assert (await box.run("cat; echo end")).stdout == "end\n"
    assert (await box.run("pwd", cwd="src")).stdout == "/workspace/src\n"
    with pytest.raises(PathEscapeError):
        await box.run("pwd", cwd="../..")
    with pytest.raises(NotFoundError):
        await box.run("pwd", cwd="nowhere")


async def test_docker_env_is_scrubbed(box: DockerSandbox) -> None:
    seen = await in_container(box, "env")
    assert "CI=kept" in seen and "TERM=dumb" in seen and "NOT_ALLOWLISTED" not in seen
    assert "sk-docker-secret" not in seen and "ghp-docker" not in seen
    assert (await box.run("echo $EXTRA", env={"EXTRA": "given"})).stdout == "given\n"


async def test_docker_timeout_kills_the_group(box: DockerSandbox) -> None:
    result = await box.run("sleep 771 & sleep 772", timeout=0.5)
    assert result.timed_out and result.exit_code == 124
    assert await in_container(box, "ps -eo args | grep -c '^sleep 77[12]' || true") == "0\n"


async def test_docker_cancel_kills_the_group_and_reraises(box: DockerSandbox) -> None:
    task = asyncio.create_task(box.run("sleep 781 & sleep 782"))
    for _ in range(200):
        if (await box.run("ps -eo args | grep -c '^sleep 78[12]' || true")).stdout == "2\n":
            break
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await in_container(box, "ps -eo args | grep -c '^sleep 78[12]' || true") == "0\n"


async def test_docker_background_leftovers_are_killed(box: DockerSandbox) -> None:
    assert (await box.run("sleep 791 >/dev/null 2>&1 &")).ok
    assert await in_container(box, "ps -eo args | grep -c '^sleep 791' || true") == "0\n"


async def test_docker_output_is_capped(box: DockerSandbox) -> None:
    result = await box.run("head -c 200000 /dev/zero | tr '\\0' y")
    assert result.stdout_truncated and len(result.stdout) == 65536
    assert not result.stderr_truncated


async def test_docker_files_go_through_the_host_fence(box: DockerSandbox, docker_ws: Path) -> None:
    await box.write_file("notes/a.txt", "alpha\nbeta\n")
    assert await in_container(box, "cat notes/a.txt") == "alpha\nbeta\n"
    await in_container(box, "printf 'gamma\\n' >> notes/a.txt")
    assert await box.read_file("notes/a.txt") == "alpha\nbeta\ngamma\n"
    assert await box.edit("notes/a.txt", "beta", "BETA") == 1
    assert [m.line for m in await box.search("BETA", path="notes")] == [2]
    assert [e.name for e in await box.list_dir("notes")] == ["a.txt"]
    await in_container(box, "ln -s /etc/passwd notes/passwd-link")
    with pytest.raises(PathEscapeError):
        await box.read_file("notes/passwd-link")
    await box.remove("notes")
    assert not (docker_ws / "notes").exists()


async def test_docker_session_keeps_cwd_and_env(box: DockerSandbox) -> None:
    session = await box.open_session()
    await session.run("cd src && export GREETING=hi")
    result = await session.run("pwd; echo $GREETING; printf tail")
    assert result.stdout == "/workspace/src\nhi\ntail"
    assert session.cwd == "src"
    slow = await session.run("sleep 30", timeout=0.5)
    assert slow.timed_out
    assert (await session.run("echo $GREETING")).stdout == "hi\n"  # SIGINT spared the shell
    await session.aclose()


async def test_docker_process_host_reads_incrementally(box: DockerSandbox) -> None:
    proc = await box.start_process("echo ready; read line; echo got $line; sleep 801")
    first = await proc.read(wait=10)
    assert first.stdout == "ready\n" and first.running
    await proc.write(b"ping\n")
    second = await proc.read(wait=10)
    assert second.stdout == "got ping\n"
    assert await proc.stop(grace=0.5) is not None
    assert not proc.running
    assert await in_container(box, "ps -eo args | grep -c '^sleep 801' || true") == "0\n"


async def test_docker_aclose_removes_the_container(docker_ws: Path) -> None:
    sandbox = DockerSandbox(docker_ws)
    await sandbox.start()
    cid = sandbox.container_id
    assert cid in labelled_containers()
    await sandbox.aclose()
    assert cid not in labelled_containers()
    with pytest.raises(SandboxClosedError):
        await sandbox.run("true")


async def test_docker_reaps_containers_of_dead_owners(docker_ws: Path) -> None:
    import docker

    from driveros.sandbox._docker_reaper import LABEL_HOST, host_id, process_start

    child = subprocess.Popen(["sleep", "30"])
    start = process_start(child.pid)
    child.kill()
    child.wait()
    client = docker.from_env()
    try:
        orphan = client.containers.create(
            "driveros-sandbox:latest",
            command=["sleep", "infinity"],
            network_mode="none",
            labels={
                "driveros.sandbox": "1",
                "driveros.owner.pid": str(child.pid),
                "driveros.owner.start": start or "",
                LABEL_HOST: host_id(),
            },
        )
        assert orphan.id in labelled_containers()
        async with DockerSandbox(docker_ws) as sandbox:
            assert (await sandbox.run("true")).ok
        assert orphan.id not in labelled_containers()
    finally:
        client.close()


async def test_docker_untrusted_uses_gvisor_or_fails_closed(docker_ws: Path) -> None:
    before = labelled_containers()
    sandbox = DockerSandbox(docker_ws, untrusted=True, runtime="runc")
    assert sandbox.tier == "docker-runsc"  # untrusted never runs on runc
    if "runsc" not in daemon_runtimes():
        with pytest.raises(RuntimeMissingError, match="apt-get install runsc"):
            await sandbox.start()
        assert labelled_containers() == before  # refused before creating anything
        await sandbox.aclose()
        return
    async with sandbox:
        kernel = await sandbox.run("dmesg 2>/dev/null | head -1; id -u")
        assert "gVisor" in kernel.stdout and kernel.stdout.endswith(f"{SANDBOX_UID}\n")
        await sandbox.write_file("gvisor.txt", "from host\n")
        assert (await sandbox.run("cat gvisor.txt")).stdout == "from host\n"
        session = await sandbox.open_session()
        await session.run("cd src && export TIER=gvisor")
        assert (await session.run("pwd; echo $TIER")).stdout == "/workspace/src\ngvisor\n"
        slow = await sandbox.run("sleep 30", timeout=0.5)
        assert slow.timed_out
