"""The command error boundary: every failure is a JSON-RPC error with one line, no traceback."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from driveros import ConfigError, MemoryStoreError
from driveros_lsp import create_server
from driveros_lsp.features.commands import REQUEST_FAILED, as_request_failed, command


def test_errors_driveros_errors_are_request_failed_with_their_message() -> None:
    for exc in (MemoryStoreError("memory search failed: malformed"), ConfigError("no key")):
        err = as_request_failed("driveros.memory.recall", exc)
        assert (err.code, err.message, err.data) == (REQUEST_FAILED, str(exc), None)


def test_errors_foreign_exceptions_are_one_line_request_failed() -> None:
    err = as_request_failed("driveros.review.accept", IsADirectoryError(21, "Is a directory"))
    assert err.code == REQUEST_FAILED and err.data is None
    assert err.message == "driveros.review.accept failed: [Errno 21] Is a directory"
    assert "Traceback" not in err.message and "\n" not in err.message


def test_errors_protocol_errors_pass_through() -> None:
    bad = JsonRpcInvalidParams("runId is missing")
    assert as_request_failed("driveros.agent.cancel", bad) is bad


async def test_errors_a_command_hit_by_a_stray_cancel_still_answers() -> None:
    # was: a CancelledError escaping from something the handler awaited (a shielded task
    # canceled elsewhere) ended pygls' executeCommand step without an answer: silence
    server = create_server()
    name = "driveros.test.interrupted"

    @command(server, name)
    async def interrupted(ls: Any, *args: Any) -> None:
        stray: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        stray.cancel()
        await stray

    written: list[bytes] = []
    server.protocol.set_writer(_Writer(written), include_headers=False)
    server.protocol.handle_message(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "workspace/executeCommand",
            "params": {"command": name, "arguments": []},
        }
    )
    async with asyncio.timeout(30):
        while not written:
            await asyncio.sleep(0.01)
    answer = json.loads(written[0])
    assert answer["id"] == 1, answer
    assert answer["error"] == {
        "code": REQUEST_FAILED,
        "message": f"{name} was interrupted; try again",
    }


class _Writer:
    def __init__(self, into: list[bytes]) -> None:
        self.into = into

    def write(self, data: bytes) -> None:
        self.into.append(data)

    def close(self) -> None:
        pass
