"""The JSON-RPC message boundary: every request gets an answer, whatever its params.

pygls turns JSON into messages in ``json.loads``' object hook, which runs on every nested
object, not only on the message: a command argument that merely looks like a JSON-RPC message
(``{"jsonrpc": "2.0", "id": 1}``) was turned into one, or failed to and took the whole request
down with it, unanswered. A request whose params do not fit the method's LSP types
(``textDocument/codeAction`` with ``line: -1``) was dropped the same way: the client waited
forever and the user got "Error in server: Invalid Params" in a popup.

:class:`DriverosProtocol` keeps nested objects plain data, reads only the message itself, and
answers a request it cannot read with InvalidParams naming the fields that are wrong
(docs/protocol.md, "Errors"). A notification it cannot read is logged (one line) and dropped,
as JSON-RPC has no way to answer it.
"""

from __future__ import annotations

import logging
from typing import Any

from cattrs import transform_error
from cattrs.errors import BaseValidationError
from cattrs.v import format_exception
from lsprotocol.types import ResponseError
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.protocol import LanguageServerProtocol

logger = logging.getLogger(__name__)

#: An error message quotes at most this much of what the client sent (it may be megabytes).
MESSAGE_LIMIT = 400
_PROBLEMS = 5


def _one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _why(exc: BaseException, type_: Any) -> str:
    # lsprotocol's range checks raise a plain ValueError that says what is wrong: keep it
    if type(exc) is ValueError and str(exc):
        return f"invalid value ({_one_line(str(exc), 100)})"
    return format_exception(exc, type_)


def describe(method: str, exc: BaseException) -> str:
    """``method: invalid params: <what is wrong, where>`` in one bounded line."""
    cause = exc.__cause__ if isinstance(exc, JsonRpcException) else exc
    if isinstance(cause, BaseValidationError):
        problems = transform_error(cause, path="$", format_exception=_why)
        shown = "; ".join(p.replace("$.params", "params", 1) for p in problems[:_PROBLEMS])
        more = len(problems) - _PROBLEMS
        if more > 0:
            shown += f"; and {more} more"
    elif cause is not None:
        shown = f"{type(cause).__name__}: {cause}"
    else:
        shown = "the params do not fit the method"
    return _one_line(f"{_one_line(method, 80)}: invalid params: {shown}")


class DriverosProtocol(LanguageServerProtocol):
    """pygls' LSP protocol, with messages read at the top level only and never left unanswered."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        # called for every JSON object of a message, innermost first: leave them all plain
        return data

    def handle_message(self, message: Any) -> None:
        if not isinstance(message, dict):
            logger.warning(
                "ignored a message that is not a JSON object: %s", type(message).__name__
            )
            return
        if message.get("jsonrpc") != self.VERSION:
            self._refuse(
                message, JsonRpcInvalidRequest('not a JSON-RPC 2.0 message ("jsonrpc": "2.0")')
            )
            return
        try:
            structured = super().structure_message(message)
        except Exception as exc:  # a client's message: refused, whatever the reason
            method = message.get("method")
            name = method if isinstance(method, str) else "message"
            self._refuse(message, JsonRpcInvalidParams(describe(name, exc)))
            return
        super().handle_message(structured)

    def _refuse(self, message: dict[str, Any], error: JsonRpcException) -> None:
        msg_id = message.get("id")
        if "method" not in message or not isinstance(msg_id, int | str) or isinstance(msg_id, bool):
            # a notification, or a response to the server: JSON-RPC has nothing to answer with
            logger.warning("ignored an unreadable message: %s", error.message)
            return
        logger.warning("refused request %r: %s", msg_id, error.message)
        self._send_response(msg_id, error=ResponseError(code=error.code, message=error.message))
