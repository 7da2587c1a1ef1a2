"""Nothing a sandbox started outlives it: aclose, and a real SIGKILL of the owning process."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from driveros.sandbox import DockerSandbox, LocalSandbox, ProcessNotFoundError, SandboxError
from tests.sandbox.conftest import (
    host_pids,
    labelled_containers,
    make_workspace,
    process_alive,
    require_docker,
)

LOCAL_OWNER = """
import asyncio, json, sys
from driveros.sandbox import LocalSandbox

async def main():
    ws = sys.argv[1]
    sandbox = LocalSandbox(ws)
    await sandbox.start()
    leak = await sandbox.run("echo LEAKED-TO-STDOUT; echo LEAKED-TO-STDERR >&2")
    assert leak.stdout == "LEAKED-TO-STDOUT\\n", leak
    await sandbox.start_process("echo $$ > proc.pid; exec sleep 901")
    session = await sandbox.open_session()
    await session.run("sleep 902 >/dev/null 2>&1 & echo $! > session.pid")
    asyncio.ensure_future(sandbox.run("echo $$ > run.pid; sleep 903"))
    home = (await sandbox.run("echo $HOME")).stdout.strip()
    print(json.dumps({"watchdog": sandbox._watchdog.pid, "home": home}), flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""

DOCKER_OWNER = """
import asyncio, json, sys
from driveros.sandbox import DockerSandbox

async def main():
    sandbox = DockerSandbox(sys.argv[1])
    await sandbox.start()
    await sandbox.start_process("sleep 905")
    print(json.dumps({"container": sandbox.container_id}), flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


async def poll(predicate: object, what: str) -> None:
    assert callable(predicate)
    for _ in range(600):
        if predicate():
            return
        await asyncio.sleep(0.05)
    pytest.fail(f"gave up waiting for {what}")


def start_owner(script: str, workspace: Path) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    owner = subprocess.Popen(
        [sys.executable, "-c", script, str(workspace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert owner.stdout is not None
    line = owner.stdout.readline()
    if not line:
        owner.wait()
        assert owner.stderr is not None
        pytest.fail(f"the owner process died: {owner.stderr.read().decode()}")
    return owner, json.loads(line)


async def test_local_owner_killed_leaves_no_process(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    owner, info = start_owner(LOCAL_OWNER, workspace)
    names = ("proc.pid", "session.pid", "run.pid")
    await poll(lambda: all((workspace / n).exists() for n in names), "the owner's processes")
    await asyncio.sleep(0.1)  # the pid files are written just before the sleeps exec
    # The files hold pids of the sandbox's PID namespace: find the sleeps by their commands.
    pids = [*host_pids("sleep", "901"), *host_pids("sleep", "902"), *host_pids("sleep", "903")]
    assert len(pids) == 3 and all(process_alive(p) for p in pids)
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    await poll(lambda: not any(process_alive(p) for p in pids), "every process to die")
    await poll(lambda: not process_alive(int(info["watchdog"])), "the watchdog to exit")
    assert not Path(info["home"]).exists()  # the scratch HOME went with them
    assert owner.stdout is not None and owner.stderr is not None
    assert b"LEAKED" not in owner.stdout.read() + owner.stderr.read()  # never inherited


async def test_local_aclose_stops_processes_and_sessions(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sandbox = LocalSandbox(workspace)
    proc = await sandbox.start_process("echo $$ > p.pid; exec sleep 911")
    assert sandbox.get_process(proc.id) is proc
    session = await sandbox.open_session()
    await session.run("sleep 912 >/dev/null 2>&1 & echo $! > s.pid")
    await poll(lambda: (workspace / "p.pid").exists(), "the process to start")
    await asyncio.sleep(0.1)  # the pid files are written just before the sleeps exec
    pids = [*host_pids("sleep", "911"), *host_pids("sleep", "912")]
    assert len(pids) == 2
    await sandbox.aclose()
    await poll(lambda: not any(process_alive(p) for p in pids), "every process to die")
    with pytest.raises(ProcessNotFoundError):
        sandbox.get_process(proc.id)


@pytest.mark.docker
async def test_docker_owner_killed_leaves_no_container(tmp_path: Path) -> None:
    require_docker()
    workspace = make_workspace(tmp_path / "ws")
    owner, info = start_owner(DOCKER_OWNER, workspace)
    assert info["container"] in labelled_containers()
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    await poll(lambda: info["container"] not in labelled_containers(), "the container to go")


async def test_local_aclose_ends_a_command_in_flight(tmp_path: Path) -> None:
    sandbox = LocalSandbox(tmp_path)
    running = asyncio.create_task(sandbox.run("sleep 921"))
    await poll(lambda: running.done() or _has_process("sleep 921"), "the command to start")
    await sandbox.aclose()
    result = await running
    assert result.exit_code == 128 + signal.SIGKILL and not _has_process("sleep 921")


@pytest.mark.docker
async def test_docker_aclose_ends_a_command_in_flight(tmp_path: Path) -> None:
    require_docker()
    sandbox = DockerSandbox(make_workspace(tmp_path / "ws"))
    await sandbox.start()
    running = asyncio.create_task(sandbox.run("echo started; sleep 931"))
    await asyncio.sleep(1)
    await sandbox.aclose()
    try:
        result = await running
    except SandboxError:
        return  # the container went away under the command: a typed error, no hang
    assert not result.ok


def _has_process(args: str) -> bool:
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").strip()
            except OSError:
                continue
            if cmdline.decode(errors="replace") == args and process_alive(int(proc.name)):
                return True
    return False


# The owner dies (SIGKILL, from inside os.mkdir) the instant its private HOME/TMPDIR directory
# exists: the watchdog must already know the directory by then.
KILLED_AT_MKDIR = """
import asyncio, os, signal, sys
from driveros.sandbox import LocalSandbox

real_mkdir = os.mkdir

def mkdir_then_die(path, *args, **kwargs):
    real_mkdir(path, *args, **kwargs)
    if os.path.basename(os.fspath(path)).startswith("driveros-sbx-"):
        os.kill(os.getpid(), signal.SIGKILL)

os.mkdir = mkdir_then_die
asyncio.run(LocalSandbox(sys.argv[1]).start())
"""


async def test_local_owner_killed_as_it_makes_its_private_dirs_leaves_none(
    tmp_path: Path,
) -> None:
    workspace, tmp = tmp_path / "ws", tmp_path / "tmp"
    workspace.mkdir()
    tmp.mkdir()
    owner = subprocess.run(
        [sys.executable, "-c", KILLED_AT_MKDIR, str(workspace)],
        env={**os.environ, "TMPDIR": str(tmp)},
        capture_output=True,
        check=False,
    )
    assert owner.returncode == -signal.SIGKILL, owner.stderr.decode()
    await poll(lambda: not any(tmp.iterdir()), "the watchdog to remove the directory")
