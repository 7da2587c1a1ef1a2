"""Property: whatever params a client sends, the server answers with a result or a typed error.

For every ``workspace/executeCommand`` command the server advertises and for
``textDocument/codeAction``, hypothesis sends JSON the way a broken or hostile client could:
wrong types, missing and extra fields, no or extra arguments, huge strings and numbers, odd
unicode and control characters, odd URIs, nested garbage (even JSON-RPC-looking objects). The
only allowed answers are a result or InvalidParams (-32602) / RequestFailed (-32803) with a
one-line readable message; never InternalError (-32603), never silence, never a traceback in
the answer or in window/logMessage / window/showMessage, and the server keeps answering.

One real ``driveros-lsp --stdio`` serves all the examples of a test: the tests are synchronous
(so hypothesis can shrink) and drive the session on one event loop of their own.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from pygls.exceptions import JsonRpcException

from driveros.testing import ScriptedModelServer, Turn
from driveros_lsp import protocol
from tests.server._lsp import Editor, _plain, editor_session
from tests.server.conftest import CALC, model_env
from tests.server.test_flow import FIX_TURNS, SETTINGS

INVALID_PARAMS = -32602
REQUEST_FAILED = -32803
#: One answer may take this long (a run start copies the workspace); a hang fails the test.
ANSWER_TIMEOUT_S = 60.0
FUZZ = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class Session:
    """A live server and the loop that drives it, shared by the examples of one test."""

    def __init__(self, loop: asyncio.AbstractEventLoop, ed: Editor, root: Path) -> None:
        self.loop = loop
        self.ed = ed
        self.root = root
        self.run_ids: list[str] = []
        _read_top_level_only(ed.client.protocol)

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    async def raw(self, method: str, params: Any) -> Any:
        """Send ``params`` as they are (no client-side typing) and return the raw answer."""
        proto = self.ed.client.protocol
        msg_id = str(uuid.uuid4())
        future = asyncio.wrap_future(proto._request_futures.setdefault(msg_id, _new_future()))
        proto._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        async with asyncio.timeout(ANSWER_TIMEOUT_S):
            return _plain(await future)

    def call(self, method: str, params: Any) -> tuple[str, Any]:
        """``("result", value)`` or ``("error", JsonRpcException)``; anything else fails."""

        async def go() -> tuple[str, Any]:
            try:
                return "result", await self.raw(method, params)
            except JsonRpcException as exc:
                return "error", exc

        return self.run(go())


def _read_top_level_only(proto: Any) -> None:
    """The test client must not mistake a nested object for a message either (see _wire)."""
    structure, handle = proto.structure_message, proto.handle_message

    def handle_top_level(message: Any) -> None:
        handle(structure(message) if isinstance(message, dict) else message)

    proto.structure_message = lambda data: data
    proto.handle_message = handle_top_level


def _new_future() -> Any:
    from concurrent.futures import Future

    return Future()


def assert_typed(outcome: tuple[str, Any], what: str) -> None:
    kind, value = outcome
    if kind == "result":
        json.dumps(value)  # a plain JSON result
        return
    assert value.code in (INVALID_PARAMS, REQUEST_FAILED), f"{what}: {value.code} {value.message}"
    message = str(value.message)
    assert message.strip(), f"{what}: an error without a message"
    assert "Traceback" not in message and 'File "' not in message, f"{what}: {message}"
    # the generic boundary's fallback ("<command> failed: ...") means an exception nobody
    # expected: params must be refused before they can raise one
    assert not message.startswith(f"{what} failed: "), f"{what}: unexpected crash: {message}"


def assert_still_fine(s: Session) -> None:
    """No traceback reached the user, and the server still answers."""
    for params in [*s.ed.client.messages, *s.ed.client.log_messages]:
        text = str(params.message)
        assert "Traceback" not in text and 'File "' not in text, text
        assert "Error in server" not in text, text
    kind, value = s.call("workspace/executeCommand", {"command": protocol.CMD_AGENT_LIST})
    assert kind == "result" and isinstance(value["runs"], list), value
    s.run_ids[:] = [r["runId"] for r in value["runs"]]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    root = tmp_path_factory.mktemp("fuzz") / "ws"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    (root / "notes.txt").write_text("hello\n")
    loop = asyncio.new_event_loop()
    model = ScriptedModelServer([*FIX_TURNS, Turn(text="nothing to do")], repeat_last=True)
    loop.run_until_complete(model.__aenter__())
    session_cm = editor_session(root, env=model_env(model), settings=SETTINGS)
    ed = loop.run_until_complete(session_cm.__aenter__())
    s = Session(loop, ed, root)
    try:
        ed.open("calc.py")
        # one real proposal, so that accept/reject/cancel also meet a run id that exists
        kind, started = s.call(
            "workspace/executeCommand",
            {"command": protocol.CMD_AGENT_START, "arguments": [{"task": "fix add"}]},
        )
        assert kind == "result", started
        s.run_ids.append(started["runId"])
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
        if run["state"] in ("running", "proposed", "queued", "starting"):
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
    "file:///" + "a/" * 3000,
    "file:///" + "x" * 5000,
    "file:///\u202ecalc.py",
    "file:///tmp/\u0000\u001b[31m",
    "mailto:x@y",
    ":",
    "%",
]
#: Text with everything a JSON string can hold: controls, RTL marks, astral planes, NULs.
odd_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
huge_text = st.integers(1_000, 300_000).map(lambda n: "\u00e9\x00\n" * (n // 3))
numbers = st.one_of(
    st.integers(-5, 5),
    st.sampled_from([-(2**63), -(2**31), 2**31 - 1, 2**31, 2**53 + 1, 2**63, 2**64, 10**30]),
    st.floats(allow_nan=False, allow_infinity=False),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, odd_text, st.sampled_from(ODD_URIS))
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
    inside = [(root / "calc.py").as_uri(), (root / "nope.py").as_uri(), root.as_uri()]
    escapes = [root.as_uri() + "/../../etc/passwd", root.as_uri() + "/%2e%2e/%2e%2e/x"]
    return st.one_of(st.sampled_from(inside + escapes + ODD_URIS), odd_text)


def command_params(s: Session, name: str) -> st.SearchStrategy[dict[str, Any]]:
    run_ids = st.one_of(
        st.sampled_from(s.run_ids or ["none"]), odd_text, st.just(""), st.just("x" * 100_000)
    )
    paths = st.lists(st.one_of(st.sampled_from(["calc.py", "../calc.py", "/etc/passwd"]), odd_text))
    fields: dict[str, st.SearchStrategy[Any]] = {
        protocol.CMD_AGENT_START: {
            "task": maybe(st.one_of(odd_text, huge_text)),
            "uri": maybe(uris(s.root)),
            "range": maybe(lsp_range),
        },
        protocol.CMD_AGENT_FIX: {
            "uri": maybe(uris(s.root)),
            "diagnostics": maybe(st.lists(maybe(diagnostic), max_size=3)),
            "all": maybe(st.booleans()),
        },
        protocol.CMD_AGENT_CANCEL: {"runId": maybe(run_ids)},
        protocol.CMD_AGENT_LIST: {},
        protocol.CMD_REVIEW_ACCEPT: {"runId": maybe(run_ids), "paths": maybe(paths)},
        protocol.CMD_REVIEW_REJECT: {
            "runId": maybe(run_ids),
            "paths": maybe(paths),
            "feedback": maybe(st.one_of(odd_text, huge_text)),
        },
        protocol.CMD_MEMORY_RECALL: {
            "query": maybe(st.one_of(odd_text, huge_text)),
            "limit": maybe(numbers),
        },
        protocol.CMD_MEMORY_FORGET: {"id": maybe(numbers), "why": maybe(odd_text)},
    }[name]
    shaped = st.builds(
        lambda chosen, extra: {**extra, **chosen},
        st.fixed_dictionaries({}, optional=fields),
        st.one_of(st.just({}), st.dictionaries(keys, garbage, max_size=2)),
    )
    arguments = st.one_of(
        st.builds(lambda p: [p], shaped),
        st.builds(lambda p, more: [p, *more], shaped, st.lists(anything, min_size=1, max_size=2)),
        st.lists(anything, max_size=3),
        st.just([]),
        st.none(),
    )
    return st.builds(
        lambda args, omit: {"command": name} if omit else {"command": name, "arguments": args},
        arguments,
        st.booleans(),
    )


# -- properties ---------------------------------------------------------------------------


def test_params_fuzz_the_server_advertises_exactly_the_fuzzed_commands(live: Session) -> None:
    result = live.ed.initialize_result  # type: ignore[attr-defined]
    advertised = set(result.capabilities.execute_command_provider.commands)
    assert advertised == set(protocol.COMMANDS)


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
