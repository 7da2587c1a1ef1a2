"""The command error boundary: every failure is a JSON-RPC error with one line, no traceback."""

from __future__ import annotations

from pygls.exceptions import JsonRpcInvalidParams

from driveros import ConfigError, MemoryStoreError
from driveros_lsp.features.commands import REQUEST_FAILED, as_request_failed


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
