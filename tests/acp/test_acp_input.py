"""Property: whatever bytes a client writes, ``driveros acp`` answers with a JSON-RPC error or
ignores them with one log line; it never prints a traceback, stdout carries JSON-RPC only,
every request is answered, and it keeps serving. Also: a client that goes away in the middle
of a prompt (closes stdin, or stops reading stdout) ends the session quietly.

One real ``driveros acp`` serves all the examples of the property (the test is synchronous so
hypothesis can shrink); a reader thread collects what it writes.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driveros.testing import ScriptedModelServer, Turn

from ._client import DRIVEROS
from .conftest import acp_environ

pytestmark = pytest.mark.e2e

#: One answer may take this long on a loaded machine; a hang fails the test.
ANSWER_TIMEOUT_S = 60.0
METHODS = [
    "initialize",
    "authenticate",
    "session/new",
    "session/load",
    "session/prompt",
    "session/cancel",
    "session/set_mode",
    "session/list",
    "fs/read_text_file",
    "no/such/method",
]

#: Stands for 50 000 nested arrays (expanded when sent: a short falsifying example).
DEEP = b"<deep>"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
ids = st.none() | st.integers() | st.text(max_size=6) | st.booleans() | st.lists(st.integers())


@st.composite
def envelopes(draw: st.DrawFn) -> dict[str, Any]:
    """JSON-RPC lookalikes: each member present or not, right or wrong."""
    message: dict[str, Any] = {}
    if draw(st.booleans()):
        message["jsonrpc"] = draw(st.sampled_from(["2.0", "2.0", "1.0", 2]))
    if draw(st.booleans()):
        message["method"] = draw(st.sampled_from(METHODS) | st.integers() | st.text(max_size=10))
    if draw(st.booleans()):
        message["id"] = draw(ids)
    for member in ("params", "result", "error"):
        if draw(st.integers(0, 3)) == 0:
            message[member] = draw(json_values)
    if draw(st.integers(0, 3)) == 0:
        message["error"] = {"code": draw(json_values), "message": draw(json_values)}
    return message


lines = st.one_of(
    st.binary(max_size=120).map(lambda b: b.replace(b"\n", b"")),
    json_values.map(lambda v: json.dumps(v).encode()),
    envelopes().map(lambda m: json.dumps(m).encode()),
    st.sampled_from([DEEP, b'{"jsonrpc": "2.0", "id": 1', b"\xff\xfe", b"   ", b"\r", b"{}"]),
)


class Agent:
    """A ``driveros acp`` process, fed by the test; a thread reads its stdout."""

    def __init__(self, cwd: Path, env: dict[str, str], stderr: Path) -> None:
        self._err = stderr.open("wb")
        self.proc = subprocess.Popen(
            [str(DRIVEROS), "acp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        self.out: queue.Queue[bytes] = queue.Queue()
        self.not_jsonrpc: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.out.put(line)

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        if data == DEEP:
            data = b"[" * 50_000
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def answers(self, wanted: set[str]) -> None:
        """Wait until a response has come for each id in ``wanted``."""
        while wanted:
            line = self.out.get(timeout=ANSWER_TIMEOUT_S)
            try:
                message = json.loads(line)
            except ValueError:
                self.not_jsonrpc.append(line)
                continue
            if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                self.not_jsonrpc.append(line)
                continue
            wanted.discard(message.get("id"))  # type: ignore[arg-type]

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=ANSWER_TIMEOUT_S)
        finally:
            self.close_log()

    def close_log(self) -> None:
        self._err.close()


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    env = {**os.environ, "LANG": "C.UTF-8"}
    running = Agent(tmp_path, env, tmp_path / "stderr.txt")
    try:
        yield running
    finally:
        if running.proc.poll() is None:
            running.proc.kill()
            running.proc.wait()
        for stream in (running.proc.stdin, running.proc.stdout):
            if stream is not None:
                stream.close()
        running.close_log()


def _tracked(line: bytes) -> str | None:
    """The id a response must come back with, for a line that is a request with our id."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if isinstance(message, dict) and "method" in message:
        rid = message.get("id")
        if isinstance(rid, str) and rid.startswith("req-"):
            return rid
    return None


def test_odd_input_never_produces_a_traceback(agent: Agent, tmp_path: Path) -> None:
    counter = iter(range(1_000_000))

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.lists(st.tuples(lines, st.booleans()), min_size=1, max_size=6))
    def check(batch: list[tuple[bytes, bool]]) -> None:
        wanted: set[str] = set()
        for line, as_request in batch:
            if as_request:  # give it a fresh id we can wait for
                try:
                    message = json.loads(line)
                except ValueError:
                    message = None
                if isinstance(message, dict) and "method" in message:
                    message["id"] = f"req-{next(counter)}"
                    line = json.dumps(message).encode()
            rid = _tracked(line)
            if rid is not None:
                wanted.add(rid)
            agent.send(line)
        sentinel = f"sentinel-{uuid.uuid4().hex}"
        agent.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": sentinel,
                    "method": "initialize",
                    "params": {"protocolVersion": 1, "clientCapabilities": {}},
                }
            ).encode()
        )
        agent.answers({sentinel, *wanted})  # still serving; every request answered
        assert agent.proc.poll() is None
        assert agent.not_jsonrpc == []

    check()
    assert agent.close() == 0
    stderr = (tmp_path / "stderr.txt").read_text(errors="replace")
    assert "Traceback" not in stderr
    assert all(line.startswith(("WARNING ", "ERROR ", "INFO ")) for line in stderr.splitlines())


async def _prompting(
    server: ScriptedModelServer, repo: Path, stdout_fd: int, stderr: Path
) -> asyncio.subprocess.Process:
    with stderr.open("wb") as err:
        proc = await asyncio.create_subprocess_exec(
            str(DRIVEROS),
            "acp",
            stdin=subprocess.PIPE,
            stdout=stdout_fd,
            stderr=err,
            env=acp_environ(server),
            cwd=repo,
            start_new_session=True,
        )
    assert proc.stdin is not None
    for message in (
        {"id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"id": 2, "method": "session/new", "params": {"cwd": str(repo), "mcpServers": []}},
    ):
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
    await proc.stdin.drain()
    return proc


async def _session_id(reader: asyncio.StreamReader) -> str:
    while True:
        message = json.loads(await reader.readline())
        if message.get("id") == 2:
            return str(message["result"]["sessionId"])


async def _prompt(proc: asyncio.subprocess.Process, session: str) -> None:
    assert proc.stdin is not None
    prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
    request = {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt}
    proc.stdin.write(json.dumps(request).encode() + b"\n")
    await proc.stdin.drain()


async def _open_pipe() -> tuple[asyncio.StreamReader, asyncio.ReadTransport, int]:
    read_fd, write_fd = os.pipe()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb")
    )
    return reader, transport, write_fd


async def _answers_until_eof(reader: asyncio.StreamReader) -> dict[object, dict[str, Any]]:
    """Every response the agent writes until it closes stdout, by id."""
    answers: dict[object, dict[str, Any]] = {}
    while line := await reader.readline():
        message = json.loads(line)
        if "method" not in message:
            answers[message.get("id")] = message
    return answers


@pytest.mark.parametrize("how", ["closes stdin at once", "closes stdin", "stops reading"])
async def test_a_client_that_leaves_mid_prompt_ends_the_session_quietly(
    calc_repo: Path, tmp_path: Path, how: str
) -> None:
    # Closing stdin still answers the prompt (cancelled): the SDK cancels every handler at
    # EOF, and `printf '...' | driveros acp` got no answer to a prompt sent just before it.
    at_once = how == "closes stdin at once"
    turns = [Turn(text="streaming " * 400, delay_s=120 if at_once else 0, interval_s=0.02)]
    answers: dict[object, dict[str, Any]] = {}
    async with ScriptedModelServer(turns) as server:
        reader, transport, write_fd = await _open_pipe()
        proc = await _prompting(server, calc_repo, write_fd, tmp_path / "stderr.txt")
        os.close(write_fd)
        try:
            session = await _session_id(reader)
            await _prompt(proc, session)
            while not at_once and not server.received:  # the run reached the model
                await asyncio.sleep(0.02)
            assert proc.stdin is not None
            if how == "stops reading":
                transport.close()  # our end of its stdout: its next write fails
            else:
                proc.stdin.close()
                answers = await asyncio.wait_for(_answers_until_eof(reader), ANSWER_TIMEOUT_S)
            code = await asyncio.wait_for(proc.wait(), ANSWER_TIMEOUT_S)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            transport.close()
    stderr = (tmp_path / "stderr.txt").read_text(errors="replace")
    assert code == 0, stderr
    assert "Traceback" not in stderr
    if how != "stops reading":
        assert answers[3] == {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "cancelled"}}
