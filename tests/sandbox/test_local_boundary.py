"""The local tier's bubblewrap boundary (docs/sandbox.md, "The local boundary"), through the
API: what a command sees of the host, its namespaces, and the network switch."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from driveros.sandbox import DockerSandbox, LocalSandbox


@pytest.fixture
def fake_home(tmp_path: Path) -> Path:
    """A user's home with secrets and a toolchain on PATH."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / ".config" / "gh").mkdir(parents=True)
    (home / ".config" / "gh" / "hosts.yml").write_text("oauth_token: gho_x\n")
    (home / ".bash_history").write_text("export TOKEN=x\n")
    (home / ".cargo" / "bin").mkdir(parents=True)
    tool = home / ".cargo" / "bin" / "mytool"
    tool.write_text("#!/bin/sh\necho tool ran\n")
    tool.chmod(0o755)
    (home / ".cargo" / "credentials.toml").write_text("token = 'x'\n")
    return home


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A host loopback TCP server recording what it receives."""
    got: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    got.append(conn.recv(100))
                except OSError:
                    got.append(b"")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], got
    finally:
        stop.set()
        thread.join()
        server.close()


async def test_local_boundary_shows_the_workspace_and_toolchains_only(
    tmp_path: Path, fake_home: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    env = {"HOME": str(fake_home), "PATH": f"{fake_home}/.cargo/bin:/usr/bin:/bin"}
    async with LocalSandbox(ws, base_env=env) as box:
        assert box.contained
        tool = await box.run("mytool")
        assert tool.stdout == "tool ran\n", tool  # the toolchain on PATH, read-only
        denied = await box.run(f"touch {fake_home}/.cargo/bin/planted")
        assert denied.exit_code != 0
        for secret in (".ssh/id_ed25519", ".config/gh/hosts.yml", ".bash_history"):
            res = await box.run(f"cat {fake_home}/{secret}")
            assert res.exit_code != 0 and res.stdout == "", secret
        assert (await box.run(f"cat {fake_home}/.cargo/credentials.toml")).exit_code != 0
        assert (await box.run(f"touch {outside}/x")).exit_code != 0
        assert (await box.run("ls /run")).stdout == ""  # no docker socket, no /run/user
        assert (await box.run("touch made && echo $HOME $TMPDIR")).exit_code == 0
        caps = await box.run("grep CapEff /proc/self/status")
        assert caps.stdout.split()[-1] == "0000000000000000"
        pids = await box.run("ls /proc | grep -c '^[0-9]'")
        assert int(pids.stdout) < 10  # its own PID namespace
    assert (ws / "made").exists()
    assert list(outside.iterdir()) == []
    assert not (fake_home / ".cargo" / "bin" / "planted").exists()


async def test_local_boundary_hides_hidden_paths(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    real_tree = tmp_path / "real"
    (real_tree / "bin").mkdir(parents=True)
    (real_tree / ".env").write_text("SECRET=1\n")
    env = {"PATH": f"{real_tree}/bin:/usr/bin:/bin"}
    async with LocalSandbox(ws, base_env=env) as box:  # control: a PATH entry is bound
        assert (await box.run(f"ls {real_tree}/bin")).exit_code == 0
        assert (await box.run(f"cat {real_tree}/.env")).exit_code != 0  # only the entry
    async with LocalSandbox(ws, base_env=env, hidden=[real_tree]) as box:
        res = await box.run(f"ls -a {real_tree}")
        assert res.exit_code != 0, res


async def test_local_boundary_binds_a_toolchain_given_twice_once(tmp_path: Path) -> None:
    """A venv on PATH that is also a ``read_only`` path (driveros' own environment, holding
    its language server) is mounted once, not once per source."""
    ws, venv = tmp_path / "ws", tmp_path / "venv"
    ws.mkdir()
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("include-system-site-packages = false\n")
    env = {"PATH": f"{venv}/bin:/usr/bin:/bin"}
    async with LocalSandbox(ws, base_env=env, read_only=[venv, venv / "bin"]) as box:
        res = await box.run("cut -d' ' -f5 /proc/self/mountinfo")
    assert res.exit_code == 0, res
    mounts = res.stdout.split()
    assert mounts.count(str(venv)) == 1, mounts
    assert mounts.count(f"{venv}/bin") == 0, mounts  # inside the venv: comes with it


START_AND_RUN = """
import asyncio, sys
from driveros.sandbox import LocalSandbox

async def main():
    env = {"PATH": sys.argv[2] + ":/usr/bin:/bin"}
    async with LocalSandbox(sys.argv[1], base_env=env) as box:
        print((await box.run("echo started")).stdout, end="")

asyncio.run(main())
"""


def test_local_boundary_starts_past_a_planted_fifo_pyvenv_cfg(tmp_path: Path) -> None:
    """A workspace ``.venv`` on the activated PATH whose ``bin/pyvenv.cfg`` (or its own) is a
    FIFO (a tarball's, or made by an earlier run's command): the sandbox still starts."""
    ws = tmp_path / "ws"
    (ws / ".venv" / "bin").mkdir(parents=True)
    os.mkfifo(ws / ".venv" / "bin" / "pyvenv.cfg")
    os.mkfifo(ws / ".venv" / "pyvenv.cfg")
    done = subprocess.run(
        [sys.executable, "-c", START_AND_RUN, str(ws), f"{ws}/.venv/bin"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "started\n"), done.stderr


@pytest.mark.parametrize("network", [False, True])
async def test_local_boundary_network_only_when_asked(
    tmp_path: Path, listener: tuple[int, list[bytes]], network: bool
) -> None:
    port, got = listener
    script = (
        "import socket\n"
        f"s = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        "s.sendall(b'hello')\n"
        "s.close()\n"
    )
    (tmp_path / "connect.py").write_text(script)
    async with LocalSandbox(tmp_path, network=network) as box:
        assert box.contained is not network
        res = await box.run("python3 connect.py")
    assert (res.exit_code == 0) is network, res
    assert (got == [b"hello"]) is network


def test_docker_contained_means_network_off(tmp_path: Path) -> None:
    assert DockerSandbox(tmp_path).contained
    assert not DockerSandbox(tmp_path, network=True).contained
