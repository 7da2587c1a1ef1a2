"""What the params fuzz (test_params_fuzz.py) found, kept as examples: each one a request a
broken or hostile client could send, answered with a result or a typed error, never a
traceback, and the server keeps answering."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from driveros_lsp import protocol
from tests.server._params_session import (
    INVALID_PARAMS,
    MESSAGE_LIMIT,
    Session,
    assert_still_fine,
    live_session,
)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    yield from live_session(tmp_path_factory)


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


def _non_finite(value: object) -> bool:
    if isinstance(value, float):
        return value != value or value in (float("inf"), float("-inf"))
    if isinstance(value, dict):
        return any(_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(_non_finite(v) for v in value)
    return False


def test_params_fuzz_nan_and_infinity_are_never_echoed(live: Session) -> None:
    # was: Python's json writes NaN/Infinity (not JSON); the server read them as floats and a
    # code action echoed them back in its command's arguments: a JSON parser chokes on that
    uri = (live.root / "calc.py").as_uri()
    point = '{"line": 0, "character": 0}'
    diagnostic = (
        f'{{"range": {{"start": {point}, "end": {point}}}, "message": "boom", '
        '"severity": 1, "source": "ruff", '
        '"data": {"score": NaN, "max": Infinity, "min": -Infinity}}'
    )
    kind, value = live.call(
        "textDocument/codeAction",
        None,
        body=f'{{"textDocument": {{"uri": "{uri}"}}, "range": {{"start": {point}, '
        f'"end": {point}}}, "context": {{"diagnostics": [{diagnostic}]}}}}',
    )
    assert kind == "result", value
    assert value, "the code action is offered"
    assert not _non_finite(value), value
    kind, err = live.call(
        "textDocument/codeAction",
        None,
        body=f'{{"textDocument": {{"uri": "{uri}"}}, "range": {{"start": {{"line": NaN, '
        f'"character": 0}}, "end": {point}}}, "context": {{"diagnostics": []}}}}',
    )
    assert kind == "error" and err.code == INVALID_PARAMS, err
    assert_still_fine(live)
