"""``driveros-lsp --tcp`` listens on loopback only (docs/security.md, "`driveros-lsp --tcp` on a
public address")."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest

from tests.security._tcp_client import Conn

LSP = [sys.executable, "-m", "driveros_lsp"]


async def _start(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *LSP,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _listening(proc: asyncio.subprocess.Process) -> tuple[str, int, str]:
    """Wait for the listening line; return host, port and what stderr said up to it."""
    assert proc.stderr is not None
    said = ""
    while True:
        line = (await proc.stderr.readline()).decode()
        assert line, f"the server exited before listening: {said}"
        said += line
        match = re.search(r"listening on (.+):(\d+)$", line.strip())
        if match:
            return match[1], int(match[2]), said


async def _connect_and_leave(host: str, port: int, said: str) -> None:
    """Be the server's client (initialize with its token), then leave: the server exits."""
    token = Path(re.findall(r"token file: (.+)", said)[-1].strip()).read_text().strip()
    reader, writer = await asyncio.open_connection("127.0.0.1" if host == "0.0.0.0" else host, port)
    conn = Conn(reader, writer)
    assert "result" in await conn.initialize({"driverosToken": token})
    await conn.aclose()


@pytest.mark.parametrize("address", ["0.0.0.0:0", "[::]:0", ":::0", "10.255.255.1:0"])
async def test_trust_tcp_on_a_non_loopback_address_is_refused(address: str) -> None:
    proc = await _start("--tcp", address)
    out, err = await proc.communicate()
    assert proc.returncode == 1
    message = err.decode()
    assert "refusing --tcp" in message and "loopback only" in message
    assert "--allow-remote-unsafe" in message and "listening" not in message
    assert "Traceback" not in message and out == b""


@pytest.mark.parametrize("address", ["127.0.0.1:0", "localhost:0", ":0"])
async def test_trust_tcp_on_loopback_serves(address: str) -> None:
    proc = await _start("--tcp", address)
    try:
        host, port, said = await _listening(proc)
        assert host in ("127.0.0.1", "::1")
        await _connect_and_leave(host, port, said)
        await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_trust_allow_remote_unsafe_is_explicit_and_warned() -> None:
    proc = await _start("--tcp", "0.0.0.0:0", "--allow-remote-unsafe")
    try:
        host, port, said = await _listening(proc)
        assert host == "0.0.0.0"
        assert "warning: --allow-remote-unsafe" in said and "anyone who can connect" in said
        await _connect_and_leave(host, port, said)
        await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
