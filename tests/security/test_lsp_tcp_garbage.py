"""Issue 35 row 1, variations: first messages an attacker sends ``driveros-lsp --tcp`` before
the token. Each connection is closed without an answer or a traceback, and the real client
that comes next is served."""

from __future__ import annotations

import pytest

from tests.security._tcp_client import connect, tcp_server

LIST = {"command": "driveros.agent.list", "arguments": []}

GARBAGE = {
    "deep_json": b"[" * 200_000 + b"]" * 200_000,
    "deep_object": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "bad_utf8": b'{"method": "\xff\xfe"}',
    "not_json": b"\x00\x01\x02 hello",
    "huge_number": b'{"id": ' + b"9" * 50_000 + b', "method": "initialize"}',
}


@pytest.mark.parametrize("kind", sorted(GARBAGE))
async def test_tcp_garbage_first_message_is_closed_and_the_client_served(kind: str) -> None:
    body = GARBAGE[kind]
    async with tcp_server() as server:
        attacker = await connect(server)
        attacker.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await attacker.writer.drain()
        assert await attacker.closed(timeout=20)  # closed, nothing answered
        await attacker.aclose()
        client = await connect(server)
        assert "result" in await client.initialize({"driverosToken": server.token})
        client.send({"method": "initialized", "params": {}})
        answer = await client.request("workspace/executeCommand", LIST)
        assert "result" in answer, answer
        await client.request("shutdown", None)
        client.send({"method": "exit", "params": None})
        await server.proc.wait()
        assert server.proc.stderr is not None
        said = (await server.proc.stderr.read()).decode()
        assert "Traceback" not in said, said
