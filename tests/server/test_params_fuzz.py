"""Property: whatever params a client sends, the server answers with a result or a typed error.

For every ``workspace/executeCommand`` command the server registers (read from the server's
own registry, not a list kept here) and for ``textDocument/codeAction``, hypothesis sends JSON
the way a broken or hostile client could: wrong types, missing and extra fields, no or extra
arguments, huge strings and numbers, odd unicode, lone surrogates and NULs, odd URIs, nested
garbage (even JSON-RPC-looking objects), and well-shaped params with odd values. The only
allowed answers are a result or InvalidParams (-32602) / RequestFailed (-32803) with a
one-line readable message; never InternalError (-32603), never silence (an answer is due
within :data:`ANSWER_TIMEOUT_S`), never a traceback in the answer, in window/logMessage /
window/showMessage or on the server's stderr, and the server keeps answering.

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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pygls.exceptions import JsonRpcException

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from driveros_lsp import create_server, protocol
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
FUZZ = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


def registered_commands() -> list[str]:
    """The commands the server registers, from its own registry."""
    names = sorted(create_server().protocol.fm.commands)
    assert names, "the server registers no workspace/executeCommand command"
    return names


COMMANDS = registered_commands()


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


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
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


# -- strategies ---------------------------------------------------------------------------

ODD_URIS = [
    "file:///../../etc/passwd",
    "file:///etc/passwd",
    "file://",
    "file:",
    "file:///",
    "file://host/share/x.py",
    "file:///tmp/%00x",
    "file:///%E0%A4%A",
    "file:///%ED%B3%BF",  # a lone surrogate, percent-encoded
    "file:///C:/Windows/x.py",
    "untitled:x",
    "untitled:Untitled-1",
    "vscode-notebook-cell:/x.ipynb#W0sZmlsZQ%3D%3D",
    "http://example.invalid/x.py",
    "calc.py",
    "../calc.py",
    "./calc.py",
    "/etc/passwd",
    "",
    " ",
    "\x00",
    "file:///\u202ecalc.py",
    "file:///tmp/\u0000\u001b[31m",
    "file:///tmp/\udcff.py",
    "mailto:x@y",
    ":",
    "%",
]
#: Text with everything a JSON string can hold: controls, RTL marks, astral planes, NULs and
#: lone surrogates (the client's JSON escapes them: ``"\udcff"``).
odd_text = st.one_of(
    st.text(st.characters(), max_size=40),
    st.text(
        st.sampled_from("a\x00\n\r\t\x1b\x7f\x85\u2028\u202e\udcff\ud800\U0001d11e"), max_size=12
    ),
)
#: Built by ``map``: a strategy's repr (shown when hypothesis reports) stays short.
long_text = st.sampled_from(["x", "a/", "\u00e9", "\udcff"]).map(lambda c: c * 5000)
long_uris = st.sampled_from(["a/", "x", "%2e%2e/"]).map(lambda c: "file:///" + c * 3000)
huge_text = st.integers(1_000, 300_000).map(lambda n: "\u00e9\x00\n\udcff"[: n % 4 + 1] * (n // 4))
numbers = st.one_of(
    st.integers(-5, 5),
    st.sampled_from(
        [
            -(2**63) - 1,
            -(2**63),
            -(2**31),
            2**31 - 1,
            2**31,
            2**53 + 1,
            2**63 - 1,
            2**63,
            2**64,
            10**30,
            10**400,
        ]
    ),
    st.integers(),
    st.floats(),
)
scalars = st.one_of(
    st.none(), st.booleans(), numbers, odd_text, st.sampled_from(ODD_URIS), long_uris
)
FIELDS = [
    "task",
    "uri",
    "range",
    "diagnostics",
    "all",
    "runId",
    "paths",
    "feedback",
    "query",
    "limit",
    "id",
    "why",
    "run_id",
    # a nested object that looks like a JSON-RPC message must stay plain data
    "jsonrpc",
    "method",
    "params",
    "result",
    "error",
    "__proto__",
    "constructor",
]
keys = st.one_of(st.sampled_from(FIELDS), odd_text)
garbage = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=10,
)
jsonrpc_lookalike = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0")},
    optional={
        "id": st.one_of(st.integers(), odd_text, garbage),
        "method": st.one_of(st.sampled_from(["initialize", "textDocument/codeAction"]), garbage),
        "params": garbage,
        "result": garbage,
        "error": garbage,
    },
)
anything = st.one_of(garbage, huge_text, jsonrpc_lookalike)


def maybe(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a plausible value, sometimes anything at all."""
    return st.one_of(good, good, anything)


position = st.fixed_dictionaries({"line": maybe(numbers), "character": maybe(numbers)})
lsp_range = st.fixed_dictionaries({"start": maybe(position), "end": maybe(position)})
diagnostic = st.fixed_dictionaries(
    {"range": maybe(lsp_range), "message": maybe(st.one_of(odd_text, huge_text))},
    optional={
        "severity": maybe(numbers),
        "code": maybe(st.one_of(numbers, odd_text)),
        "source": maybe(odd_text),
        "relatedInformation": garbage,
        "data": garbage,
        "tags": garbage,
    },
)


def uris(root: Path) -> st.SearchStrategy[str]:
    inside = [
        (root / "calc.py").as_uri(),
        (root / "notes.txt").as_uri(),
        (root / "nope.py").as_uri(),
        root.as_uri(),
        root.as_uri() + "/",
        root.as_uri() + "/sub/../calc.py",
        root.as_uri() + "/calc.py%00.txt",
        root.as_uri() + "/%ED%B3%BF.py",
        root.as_uri().replace("file://", "file://localhost") + "/calc.py",
        root.as_uri().upper(),
    ]
    escapes = [root.as_uri() + "/../../etc/passwd", root.as_uri() + "/%2e%2e/%2e%2e/x"]
    return st.one_of(st.sampled_from(inside + escapes + ODD_URIS), long_uris, odd_text)


def field_values(s: Session) -> dict[str, st.SearchStrategy[Any]]:
    """A plausible (then odd) value for each field any command takes, by wire name."""
    # an index into the live runs (newest first), so that what is drawn does not depend on
    # how many runs there are
    live_run = st.integers(0, 255).map(
        lambda i: s.run_ids[-1 - i % len(s.run_ids)] if s.run_ids else "none"
    )
    run_ids = st.one_of(live_run, live_run, odd_text, st.just(""), long_text)
    texts = st.one_of(odd_text, huge_text)
    paths = st.lists(
        st.one_of(
            st.sampled_from(
                ["calc.py", "notes.txt", "../calc.py", "/etc/passwd", "notes.txt\x00", ""]
            ),
            odd_text,
        ),
        max_size=3,
    )
    return {
        "task": maybe(texts),
        "uri": maybe(uris(s.root)),
        "range": maybe(lsp_range),
        "diagnostics": maybe(st.lists(maybe(diagnostic), max_size=3)),
        "all": maybe(st.booleans()),
        "runId": maybe(run_ids),
        "paths": maybe(paths),
        "feedback": maybe(st.one_of(st.none(), texts)),
        "query": maybe(texts),
        "limit": maybe(numbers),
        "id": maybe(st.one_of(numbers, st.integers(1, len(FACTS)))),
        "why": maybe(texts),
    }


#: The fields each command's object argument has (docs/protocol.md); a command not listed
#: here (a new one) is fuzzed with every known field.
COMMAND_FIELDS: dict[str, tuple[str, ...]] = {
    protocol.CMD_AGENT_START: ("task", "uri", "range"),
    protocol.CMD_AGENT_FIX: ("uri", "diagnostics", "all"),
    protocol.CMD_AGENT_CANCEL: ("runId",),
    protocol.CMD_AGENT_LIST: (),
    protocol.CMD_REVIEW_ACCEPT: ("runId", "paths"),
    protocol.CMD_REVIEW_REJECT: ("runId", "paths", "feedback"),
    protocol.CMD_MEMORY_RECALL: ("query", "limit"),
    protocol.CMD_MEMORY_FORGET: ("id", "why"),
}


def command_params(s: Session, data: st.DataObject, name: str) -> dict[str, Any]:
    values = field_values(s)
    fields = {f: values[f] for f in COMMAND_FIELDS.get(name, tuple(values))}
    shaped = st.builds(
        lambda chosen, extra: {**extra, **chosen},
        st.fixed_dictionaries({}, optional=fields),
        st.one_of(st.just({}), st.dictionaries(keys, garbage, max_size=2)),
    )
    arguments = st.one_of(
        st.builds(lambda p: [p], shaped),
        st.builds(lambda p: [p], shaped),
        st.builds(lambda p, more: [p, *more], shaped, st.lists(anything, min_size=1, max_size=2)),
        st.lists(anything, max_size=3),
        st.just([]),
        st.none(),
        anything,
    )
    params: dict[str, Any] = data.draw(
        st.builds(
            lambda args, omit: {"command": name} if omit else {"command": name, "arguments": args},
            arguments,
            st.booleans(),
        ),
        label="params",
    )
    return params


def code_action_params(s: Session, data: st.DataObject) -> Any:
    kinds = st.lists(
        maybe(st.sampled_from(["", "quickfix", "refactor", "source", "quickfix.x"])), max_size=3
    )
    context = st.fixed_dictionaries(
        {"diagnostics": maybe(st.lists(maybe(diagnostic), max_size=3))},
        optional={"only": maybe(kinds), "triggerKind": maybe(numbers)},
    )
    shaped = st.fixed_dictionaries(
        {
            "textDocument": maybe(st.fixed_dictionaries({"uri": maybe(uris(s.root))})),
            "range": maybe(lsp_range),
            "context": maybe(context),
        },
        optional={"workDoneToken": maybe(odd_text), "partialResultToken": garbage},
    )
    return data.draw(st.one_of(shaped, shaped, shaped, anything), label="params")


# -- properties ---------------------------------------------------------------------------


def test_params_fuzz_the_server_advertises_every_registered_command(live: Session) -> None:
    result = live.ed.initialize_result  # type: ignore[attr-defined]
    advertised = set(result.capabilities.execute_command_provider.commands)
    assert advertised == set(COMMANDS)
    assert set(protocol.COMMANDS) == set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
@FUZZ
@given(data=st.data())
def test_params_fuzz_every_command_answers_a_result_or_a_typed_error(
    live: Session, name: str, data: st.DataObject
) -> None:
    live.ensure_proposal()
    params = command_params(live, data, name)
    assert_typed(live.call("workspace/executeCommand", params), name)
    assert_still_fine(live)


@FUZZ
@given(data=st.data())
def test_params_fuzz_code_actions_answer_a_result_or_a_typed_error(
    live: Session, data: st.DataObject
) -> None:
    live.ensure_proposal()
    params = code_action_params(live, data)
    assert_typed(live.call("textDocument/codeAction", params), "textDocument/codeAction")
    assert_still_fine(live)


# -- the findings, as examples ------------------------------------------------------------


def test_params_fuzz_an_argument_that_looks_like_a_message_is_just_an_argument(
    live: Session,
) -> None:
    # was: the nested object was read as a JSON-RPC response, failed, and the request was
    # dropped unanswered (the client waited forever)
    for lookalike in ({"jsonrpc": "2.0", "id": 7}, {"jsonrpc": "2.0", "id": 7, "method": "x"}):
        kind, err = live.call(
            "workspace/executeCommand",
            {"command": protocol.CMD_AGENT_CANCEL, "arguments": [lookalike]},
        )
        assert kind == "error" and err.code == INVALID_PARAMS, err
        assert "runId" in err.message and "jsonrpc" in err.message, err.message
    assert_still_fine(live)


def test_params_fuzz_a_request_that_does_not_fit_its_lsp_type_is_invalid_params(
    live: Session,
) -> None:
    # was: no answer at all, and "Error in server: Invalid Params" shown to the user
    uri = (live.root / "calc.py").as_uri()
    point = {"line": -1, "character": 0}
    kind, err = live.call(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": uri},
            "range": {"start": point, "end": point},
            "context": {"diagnostics": []},
        },
    )
    assert kind == "error" and err.code == INVALID_PARAMS, err
    assert err.message.startswith("textDocument/codeAction: invalid params: "), err.message
    assert "Position.line should be in range" in err.message, err.message
    assert "@ params.range.start" in err.message, err.message
    kind, err = live.call("textDocument/codeAction", {"textDocument": "x" * 100_000})
    assert kind == "error" and err.code == INVALID_PARAMS, err
    assert len(err.message) <= 400 and "\n" not in err.message, err.message
    assert_still_fine(live)


def test_params_fuzz_a_typed_error_leaves_no_traceback_in_the_log(live: Session) -> None:
    # was: pygls logged every InvalidParams/RequestFailed answer with its traceback (ERROR),
    # and every request it could not read with the cattrs exception group
    live.new_stderr()
    for params in (
        {"command": protocol.CMD_AGENT_CANCEL, "arguments": []},
        {"command": protocol.CMD_AGENT_CANCEL, "arguments": False},
        {"command": protocol.CMD_REVIEW_ACCEPT, "arguments": [{"runId": "nope"}]},
    ):
        kind, err = live.call("workspace/executeCommand", params)
        assert kind == "error" and err.code == INVALID_PARAMS, err
    stderr = live.new_stderr()
    assert "Traceback" not in stderr and "Unable to deserialize" not in stderr, stderr
    assert_still_fine(live)


def test_params_fuzz_an_error_message_is_one_bounded_printable_line(live: Session) -> None:
    # was: the run id came back whole (100 000 characters), an unknown field named "\n"
    # broke the line, and control characters reached the editor's popup as they were
    cases = [
        ({"command": protocol.CMD_AGENT_CANCEL, "arguments": [{"runId": "x" * 100_000}]}, "x"),
        ({"command": protocol.CMD_MEMORY_RECALL, "arguments": [{"\n": None}]}, "'\\n'"),
        (
            {"command": protocol.CMD_AGENT_CANCEL, "arguments": [{"runId": "a\x1b[31m\x07"}]},
            "a\\x1b[31m\\x07",
        ),
    ]
    for params, shown in cases:
        kind, err = live.call("workspace/executeCommand", params)
        assert kind == "error" and err.code == INVALID_PARAMS, err
        assert shown in err.message, err.message
        assert len(err.message) <= MESSAGE_LIMIT, len(err.message)
        assert err.message.isprintable(), repr(err.message)
    assert_still_fine(live)


def test_params_fuzz_a_fact_id_beyond_sqlite_is_invalid_params(live: Session) -> None:
    # was: RequestFailed "driveros.memory.forget failed: Python int too large to convert to
    # SQLite INTEGER", with a traceback in the log
    for fact_id in (2**63, 2**64, 10**30):
        kind, err = live.call(
            "workspace/executeCommand",
            {"command": protocol.CMD_MEMORY_FORGET, "arguments": [{"id": fact_id}]},
        )
        assert kind == "error" and err.code == INVALID_PARAMS, err
        assert "id: Input should be less than or equal to 9223372036854775807" in err.message
    kind, err = live.call(
        "workspace/executeCommand",
        {"command": protocol.CMD_MEMORY_FORGET, "arguments": [{"id": 2**63 - 1}]},
    )
    assert kind == "error" and err.code == INVALID_PARAMS and "no fact" in err.message, err
    assert_still_fine(live)


def test_params_fuzz_a_relative_file_uri_is_not_in_the_workspace(live: Session) -> None:
    # was: file:calc.py resolved against the server's working directory
    for uri in ("file:calc.py", "file:./calc.py", "file:ws/calc.py"):
        kind, err = live.call(
            "workspace/executeCommand",
            {"command": protocol.CMD_AGENT_START, "arguments": [{"task": "t", "uri": uri}]},
        )
        assert kind == "error" and err.code == INVALID_PARAMS, err
        assert "is not inside the workspace" in err.message, err.message
    assert_still_fine(live)


def test_params_fuzz_lone_surrogates_in_free_text_are_escaped_not_refused(live: Session) -> None:
    # was: InvalidParams "unable to parse raw data as a unicode string" for a task, a
    # diagnostic or a reason holding an undecodable byte (a linter naming an odd file)
    uri = (live.root / "calc.py").as_uri()
    point = {"line": 0, "character": 0}
    diag = {"range": {"start": point, "end": point}, "message": "bad name \udcff.py"}
    for name, args in (
        (protocol.CMD_AGENT_START, {"task": "fix \udcff"}),
        (protocol.CMD_AGENT_FIX, {"uri": uri, "diagnostics": [diag]}),
    ):
        run_id = live.command(name, args)["runId"]
        listed = {r["runId"]: r for r in live.command(protocol.CMD_AGENT_LIST)["runs"]}
        assert "\\xff" in listed[run_id]["task"], listed[run_id]["task"]
    recalled = live.command(protocol.CMD_MEMORY_RECALL, {"query": "calc \udcff"})["facts"]
    assert [f["text"] for f in recalled] == ["the add function lives in calc.py"], recalled
    forgotten = live.command(protocol.CMD_MEMORY_FORGET, {"id": 3, "why": "odd \udcff"})["fact"]
    assert forgotten["status"] == "forgotten", forgotten
    assert_still_fine(live)


def test_params_fuzz_a_huge_string_where_an_array_belongs_is_refused_at_once(
    live: Session,
) -> None:
    # was: the stall the properties kept finding. cattrs read the 300 000-character string as
    # an array of 300 000 diagnostics, raised and formatted one exception per character, and
    # the server's only loop answered nothing at all for a minute (every request timed out)
    uri = (live.root / "calc.py").as_uri()
    point = {"line": 0, "character": 0}
    for diagnostics in ("\u00e9\x00\n" * 100_000, [{}] * 100_000, {"0": {}}):
        kind, err = live.call(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": {"start": point, "end": point},
                "context": {"diagnostics": diagnostics},
            },
        )
        assert kind == "error" and err.code == INVALID_PARAMS, err
        assert "@ params.context.diagnostics" in err.message, err.message
        kind, err = live.call(
            "workspace/executeCommand",
            {
                "command": protocol.CMD_AGENT_FIX,
                "arguments": [{"uri": uri, "diagnostics": diagnostics}],
            },
        )
        assert kind == "error" and err.code == INVALID_PARAMS, err
        assert "diagnostics" in err.message, err.message
    assert_still_fine(live)


def test_params_fuzz_valid_json_python_cannot_read_is_still_answered(live: Session) -> None:
    # was: an integer of more than 4300 digits (valid JSON) failed pygls' json.loads: no answer,
    # a traceback on stderr and "Error in server" in a popup; a body that is not JSON likewise
    digits = "9" * 5000
    kind, err = live.call(
        "workspace/executeCommand",
        None,
        body=f'{{"command": "{protocol.CMD_MEMORY_FORGET}", "arguments": [{{"id": {digits}}}]}}',
    )
    assert kind == "error" and err.code == INVALID_PARAMS, err
    assert err.message.startswith(f"{protocol.CMD_MEMORY_FORGET}: invalid params: id: "), err
    uri = (live.root / "calc.py").as_uri()
    point = f'{{"line": {digits}, "character": 0}}'
    kind, err = live.call(
        "textDocument/codeAction",
        None,
        body=f'{{"textDocument": {{"uri": "{uri}"}}, "range": {{"start": {point}, '
        f'"end": {point}}}, "context": {{"diagnostics": []}}}}',
    )
    assert kind == "error" and err.code == INVALID_PARAMS, err
    assert "@ params.range.start" in err.message, err.message
    live.send_bytes('{"jsonrpc": "2.0", "id": 1, "method": ')  # cut short: not JSON
    live.send_bytes("\udcff")  # not even UTF-8
    assert_still_fine(live)
    assert "the message is not JSON" in live.stderr.read_text(), "the parse errors are logged"
