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

The session they drive is in _params_session.py; what the fuzzing found is kept as examples
in test_params_examples.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driveros_lsp import create_server, protocol
from tests.server._params_session import (
    FACTS,
    Session,
    assert_still_fine,
    assert_typed,
    live_session,
)

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


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    yield from live_session(tmp_path_factory)


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
