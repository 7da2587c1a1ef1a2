"""The session the params fuzz tests drive (test_params_fuzz.py, the properties, and
test_params_examples.py, its findings as examples).

One real ``driveros-lsp --stdio`` serves all the examples of a module: the tests are
synchronous (so hypothesis can shrink) and drive the session on one event loop of their own.
The scripted model proposes a change in every run, so that accept, reject, cancel and the
code actions meet a live proposal.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from driveros_lsp import protocol
from tests.server._lsp import Editor, _plain, editor_session
from tests.server.conftest import CALC, model_env
from tests.server.test_flow import SETTINGS

INVALID_PARAMS = -32602
REQUEST_FAILED = -32803
#: Every request is answered at once (a run is a background task): no answer in this long is
#: a hang, and the test fails with the params that caused it.
ANSWER_TIMEOUT_S = 8.0
#: An error message is one line of at most this many characters (docs/protocol.md, "Errors").
MESSAGE_LIMIT = 400


class NoAnswer(AssertionError):
    """The server did not answer a request in time."""


class Session:
    """A live server and the loop that drives it, shared by the examples of a module."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, ed: Editor, root: Path, stderr: Path
    ) -> None:
        self.loop = loop
        self.ed = ed
        self.root = root
        self.stderr = stderr
        self.run_ids: list[str] = []
        self._stderr_seen = 0
        self._messages_seen = 0
        _read_top_level_only(ed.client.protocol)

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    async def raw(self, method: str, params: Any, *, body: str | None = None) -> Any:
        """Send ``params`` as they are (no client-side typing) and return the raw answer.

        ``body``: the JSON text of the params as written (JSON Python would not write)."""
        proto = self.ed.client.protocol
        msg_id = str(uuid.uuid4())
        future = asyncio.wrap_future(proto._request_futures.setdefault(msg_id, Future()))
        if body is None:
            proto._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        else:
            self.send_bytes(
                f'{{"jsonrpc": "2.0", "id": "{msg_id}", "method": "{method}", "params": {body}}}'
            )
        try:
            async with asyncio.timeout(ANSWER_TIMEOUT_S):
                return _plain(await future)
        except TimeoutError:
            proto._request_futures.pop(msg_id, None)
            shown = json.dumps(params) if body is None else body
            shown = shown if len(shown) <= 2000 else shown[:2000] + "..."
            raise NoAnswer(
                f"no answer in {ANSWER_TIMEOUT_S:g} s to {method} {shown}\n"
                f"server stderr:\n{self.stderr.read_text(errors='replace')[-4000:]}"
            ) from None

    def send_bytes(self, body: str) -> None:
        """Write one framed message whose body is ``body`` as it is."""
        data = body.encode("utf-8", "surrogatepass")
        # the server's stdin (an asyncio StreamWriter: write() buffers, never blocks)
        self.ed.client.protocol.writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(data), data))

    def call(self, method: str, params: Any, *, body: str | None = None) -> tuple[str, Any]:
        """``("result", value)`` or ``("error", JsonRpcException)``; anything else fails."""

        async def go() -> tuple[str, Any]:
            try:
                return "result", await self.raw(method, params, body=body)
            except JsonRpcException as exc:
                return "error", exc

        result: tuple[str, Any] = self.run(go())
        return result

    def command(self, name: str, *arguments: Any) -> Any:
        kind, value = self.call(
            "workspace/executeCommand", {"command": name, "arguments": list(arguments)}
        )
        assert kind == "result", f"{name}: {value.code} {value.message}"
        return value

    def new_stderr(self) -> str:
        text = self.stderr.read_text(errors="replace")
        new, self._stderr_seen = text[self._stderr_seen :], len(text)
        return new

    def new_messages(self) -> list[str]:
        client = self.ed.client
        shown = [str(p.message) for p in [*client.messages, *client.log_messages]]
        new, self._messages_seen = shown[self._messages_seen :], len(shown)
        return new

    async def runs(self) -> list[dict[str, Any]]:
        answer = await self.raw("workspace/executeCommand", {"command": protocol.CMD_AGENT_LIST})
        runs: list[dict[str, Any]] = answer["runs"]
        return runs

    def ensure_proposal(self) -> bool:
        """A run is ``proposed`` (the scripted model proposes a change in every run)."""

        async def wait() -> bool:
            runs = await self.runs()
            if not any(r["state"] in ("proposed", "running") for r in runs):
                await self.raw(
                    "workspace/executeCommand",
                    {"command": protocol.CMD_AGENT_START, "arguments": [{"task": "propose"}]},
                )
            async with asyncio.timeout(60):
                while True:
                    runs = await self.runs()
                    if any(r["state"] == "proposed" for r in runs):
                        return True
                    if not any(r["state"] == "running" for r in runs):
                        return False
                    await asyncio.sleep(0.05)

        proposed: bool = self.run(wait())
        self.refresh_run_ids()
        return proposed

    def refresh_run_ids(self) -> None:
        runs = self.command(protocol.CMD_AGENT_LIST)["runs"]
        self.run_ids[:] = [r["runId"] for r in runs]


def _read_top_level_only(proto: Any) -> None:
    """The test client must not mistake a nested object for a message either (see _wire)."""
    structure, handle = proto.structure_message, proto.handle_message

    def handle_top_level(message: Any) -> None:
        handle(structure(message) if isinstance(message, dict) else message)

    proto.structure_message = lambda data: data
    proto.handle_message = handle_top_level


def assert_typed(outcome: tuple[str, Any], what: str) -> None:
    kind, value = outcome
    if kind == "result":
        json.dumps(value)  # a plain JSON result
        return
    assert value.code in (INVALID_PARAMS, REQUEST_FAILED), f"{what}: {value.code} {value.message}"
    message = str(value.message)
    assert message.strip(), f"{what}: an error without a message"
    assert "\n" not in message and len(message) <= MESSAGE_LIMIT, f"{what}: {message[:2000]!r}"
    assert "Traceback" not in message and 'File "' not in message, f"{what}: {message}"
    # the generic boundary's fallback ("<command> failed: ...") means an exception nobody
    # expected: params must be refused before they can raise one
    assert not message.startswith(f"{what} failed: "), f"{what}: unexpected crash: {message}"


def assert_still_fine(s: Session) -> None:
    """No traceback reached the user or the log, and the server still answers."""
    for text in s.new_messages():
        assert "Traceback" not in text and 'File "' not in text, text
        assert "Error in server" not in text, text
    s.refresh_run_ids()
    stderr = s.new_stderr()
    assert "Traceback" not in stderr, stderr[-4000:]


def _proposal_turns(count: int) -> list[Turn]:
    """Each run writes notes.txt (a change to propose), then answers."""
    turns: list[Turn] = []
    for i in range(count):
        write = ToolCallSpec("write_file", {"path": "notes.txt", "content": f"note {i}\n"})
        turns += [Turn(tool_calls=[write]), Turn(text="wrote a note")]
    return turns


#: Remembered before the server starts: recall finds them and forget meets real ids.
FACTS = ["tests run with make test", "the add function lives in calc.py", "use ruff to lint"]


async def _remember(root: Path, facts: list[str]) -> None:
    from driveros.config import load_environment
    from driveros.memory import Provenance, open_memory_store

    store = await open_memory_store(root, load_environment(cwd=root))
    try:
        await store.apply(adds=facts, provenance=Provenance(source="manual"), op="import")
    finally:
        await store.aclose()


def live_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """One real server with a live proposal, for a module's ``live`` fixture."""
    base = tmp_path_factory.mktemp("fuzz")
    root = base / "ws"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    (root / "notes.txt").write_text("hello\n")
    stderr = base / "server-stderr.log"
    stderr.touch()
    # the server's stderr goes to a file the examples read (pytest-lsp would forward it)
    command = [
        "/bin/sh",
        "-c",
        'exec "$0" -m driveros_lsp --stdio 2>>"$1"',
        sys.executable,
        str(stderr),
    ]
    loop = asyncio.new_event_loop()
    loop.run_until_complete(_remember(root, FACTS))
    model = ScriptedModelServer(_proposal_turns(500), repeat_last=True)
    loop.run_until_complete(model.__aenter__())
    # a client without change annotations: a proposal waits for accept/reject (VS Code's
    # annotated edit would be sent, and applied by the test editor, as soon as it is proposed)
    session_cm = editor_session(
        root, profile="neovim", env=model_env(model), settings=SETTINGS, command=command
    )
    ed = loop.run_until_complete(session_cm.__aenter__())
    s = Session(loop, ed, root, stderr)
    try:
        ed.open("calc.py")
        assert s.ensure_proposal()
        yield s
    finally:
        try:
            loop.run_until_complete(_no_leaked_runs(s))
        finally:
            loop.run_until_complete(session_cm.__aexit__(None, None, None))
            loop.run_until_complete(model.__aexit__(None, None, None))
            loop.close()


async def _no_leaked_runs(s: Session) -> None:
    """Cancel every run still going; all of them end (no run outlives the test)."""
    cmd = "workspace/executeCommand"
    listing = await s.raw(cmd, {"command": protocol.CMD_AGENT_LIST})
    for run in listing["runs"]:
        if run["state"] in ("running", "proposed"):
            try:
                await s.raw(
                    cmd,
                    {"command": protocol.CMD_AGENT_CANCEL, "arguments": [{"runId": run["runId"]}]},
                )
            except JsonRpcException as exc:  # it ended meanwhile
                assert exc.code == REQUEST_FAILED, exc.message
    async with asyncio.timeout(120):
        while any(
            r["state"] == "running"
            for r in (await s.raw(cmd, {"command": protocol.CMD_AGENT_LIST}))["runs"]
        ):
            await asyncio.sleep(0.05)
