"""Issue 35 row 1: ``driveros-lsp --tcp`` serves exactly one client, which must send the token
the server wrote to a 0600 file. A second connection is refused and never touches the first;
a connection without the right token is answered nothing (but the refusal) and closed, and the
server goes on waiting for its client."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from driveros_lsp._tcp import MAX_WAITING
from tests.security._tcp_client import Conn, TcpServer, connect, start, tcp_server

LIST = {"command": "driveros.agent.list", "arguments": []}


async def _serves(conn: Conn) -> None:
    """``conn`` is the served client: a command is answered."""
    answer = await conn.request("workspace/executeCommand", LIST)
    assert "result" in answer and "error" not in answer, answer


async def _refused_at_connect(server: TcpServer) -> None:
    with pytest.raises(ConnectionRefusedError):
        await asyncio.open_connection(server.host, server.port)


async def _ends(server: TcpServer, conn: Conn) -> int:
    await conn.request("shutdown", None)
    conn.send({"method": "exit", "params": None})
    return await asyncio.wait_for(server.proc.wait(), 30)


async def test_tcp_serves_one_client_and_refuses_the_next(tmp_path: Path) -> None:
    async with tcp_server() as server:
        first = await connect(server)
        init = await first.initialize({"driverosToken": server.token})
        assert "capabilities" in init["result"], init
        first.send({"method": "initialized", "params": {}})
        await _refused_at_connect(server)  # the listener is closed
        await _serves(first)
        await _refused_at_connect(server)
        await _serves(first)  # the refused attempt did not end or take the session
        assert await _ends(server, first) == 0


async def test_tcp_refuses_a_wrong_or_missing_token_and_keeps_waiting() -> None:
    async with tcp_server() as server:
        refused = []
        for options in ({"driverosToken": "x" * 43}, {}, None, {"driverosToken": 7}):
            conn = await connect(server)
            answer = await conn.initialize(options)
            assert "result" not in answer and answer["error"]["code"] == -32001, answer
            assert "driverosToken" in answer["error"]["message"]
            assert server.token not in answer["error"]["message"]
            refused.append(await conn.closed())
        assert refused == [True] * 4
        # Anything before a valid initialize: not answered, closed.
        sneaky = await connect(server)
        sneaky.send({"id": 1, "method": "workspace/executeCommand", "params": LIST})
        assert await sneaky.closed()
        client = await connect(server)
        assert "result" in await client.initialize({"driverosToken": server.token})
        await _serves(client)
        assert await _ends(server, client) == 0


async def test_tcp_a_connection_that_waits_or_leaves_never_ends_the_client() -> None:
    async with tcp_server() as server:
        idle = await connect(server)  # connects first, sends nothing
        crowd = [await connect(server) for _ in range(MAX_WAITING)]  # cannot lock it out
        leaver = await connect(server)
        leaver.writer.write(b"Content-Length: 5\r\n\r\n{}")
        await leaver.aclose()
        client = await connect(server)
        assert "result" in await client.initialize({"driverosToken": server.token})
        for other in (idle, *crowd):
            assert await other.closed()  # dropped to make room, or once the client is in
            await other.aclose()
        await _serves(client)
        assert server.proc.returncode is None
        assert await _ends(server, client) == 0


async def test_tcp_token_file_is_private_and_removed_at_exit() -> None:
    async with tcp_server() as server:
        assert server.token_file is not None
        st = server.token_file.stat()
        assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid()
        assert stat.S_IMODE(server.token_file.parent.stat().st_mode) == 0o700
        assert len(server.token) >= 32
        client = await connect(server)
        await client.initialize({"driverosToken": server.token})
        assert await _ends(server, client) == 0
        assert not server.token_file.exists()


async def test_tcp_token_file_of_the_users_own(tmp_path: Path) -> None:
    mine = tmp_path / "token"
    mine.write_text("my-own-token-0123456789abcdef\n")
    mine.chmod(0o644)
    proc = await start("--tcp", "127.0.0.1:0", "--tcp-token-file", str(mine))
    out, err = await proc.communicate()
    assert proc.returncode == 1 and "chmod 600" in err.decode() and out == b""
    assert "Traceback" not in err.decode()
    mine.chmod(0o600)
    async with tcp_server("--tcp-token-file", str(mine)) as server:
        assert server.token_file is None  # the user's file is named nowhere, used as is
        wrong = await connect(server)
        assert "error" in await wrong.initialize({"driverosToken": "a" * 29})
        client = await connect(server)
        assert "result" in await client.initialize({"driverosToken": mine.read_text().strip()})
        await _serves(client)
        assert await _ends(server, client) == 0
    assert mine.exists()


async def test_tcp_no_token_serves_the_first_connection_only() -> None:
    async with tcp_server("--tcp-no-token") as server:
        assert "warning: --tcp-no-token" in server.said and server.token_file is None
        first = await connect(server)
        assert "result" in await first.initialize(None)
        await _refused_at_connect(server)
        await _serves(first)
        assert await _ends(server, first) == 0
