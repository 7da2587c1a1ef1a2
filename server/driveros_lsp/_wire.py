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
as JSON-RPC has no way to answer it. Reading never stalls the loop (an array is read only
from a JSON array, and stops at its first bad items), every error answer is one bounded
printable line logged without a traceback, and :func:`read_messages` reads all valid JSON.
"""

from __future__ import annotations

import json
import logging
import re
from collections import abc
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, get_args, get_origin

from cattrs import Converter, transform_error
from cattrs.errors import BaseValidationError, IterableValidationError, IterableValidationNote
from cattrs.v import format_exception
from lsprotocol.types import ResponseError, ResponseErrorMessage
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
)
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
)

logger = logging.getLogger(__name__)

#: An error message quotes at most this much of what the client sent (it may be megabytes).
MESSAGE_LIMIT = 400
_PROBLEMS = 5
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that surrogateescape could not decode
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` as one printable line of at most ``limit`` characters: whitespace runs
    (newlines included) become one space, control characters and lone surrogates escapes."""
    line = _UNPRINTABLE.sub(_escape, " ".join(text.split()))
    return line if len(line) <= limit else line[: limit - 1] + "…"


def printable(text: str) -> str:
    """``text`` with its lone surrogates (undecodable bytes that JSON smuggled in) escaped."""
    return _LONE_SURROGATE.sub(_escape, text)


def _why(exc: BaseException, type_: Any) -> str:
    # lsprotocol's range checks raise a plain ValueError that says what is wrong: keep it
    if type(exc) is ValueError and str(exc):
        return f"invalid value ({one_line(str(exc), 100)})"
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
    return one_line(f"{one_line(method, 80)}: invalid params: {shown}")


_CONTENT_LENGTH = re.compile(rb"^Content-Length: (\d+)\r\n$")


def _json_int(text: str) -> int | str:
    """An integer literal; one longer than Python reads (4300 digits) stays its digits, a
    string no integer field accepts: the request is InvalidParams, not unreadable."""
    try:
        return int(text)
    except ValueError:
        return text


def _json_constant(text: str) -> str:
    """``NaN``/``Infinity``/``-Infinity`` (which Python's json writes, though they are not
    JSON) stay their names, strings: read as floats they were echoed back (a code action's
    diagnostics), making an answer no JSON parser reads; a number field refuses them
    (InvalidParams)."""
    return text


async def read_messages(reader: Any, protocol: LanguageServerProtocol) -> None:
    """Read ``Content-Length`` framed messages from ``reader`` until it ends, as pygls'
    ``run_async`` does, except that all valid JSON is read (pygls' ``json.loads`` fails on an
    integer of 4301 digits: the request went unanswered, with a traceback and an "Error in
    server" popup) and a body that is not JSON is answered ParseError (``id: null``)."""
    length = 0
    while True:
        header = await reader.readline()
        if not header:
            return
        if not length and (match := _CONTENT_LENGTH.fullmatch(header)):
            length = int(match.group(1))
        if not length or header.strip():
            continue
        body = await reader.readexactly(length)
        length = 0
        if not body:
            return
        try:
            message = json.loads(body, parse_int=_json_int, parse_constant=_json_constant)
        except ValueError as exc:  # not JSON, or not UTF-8: ParseError, id null (JSON-RPC)
            error = JsonRpcParseError(one_line(f"the message is not JSON: {exc}"))
            logger.warning("%s", error.message)
            answer = {"code": error.code, "message": error.message}
            protocol._send_data({"jsonrpc": "2.0", "id": None, "error": answer})
            continue
        try:
            protocol.handle_message(message)
        except Exception:  # a bug: logged, and the next message is read
            logger.exception("handling a message failed")


def _array_of(converter: Converter, type_: Any) -> Callable[[Any, Any], list[Any]]:
    """How ``converter`` reads an LSP array (``Sequence[X]``) without ever stalling.

    cattrs reads any iterable as a sequence: a 300 000-character string where an array was
    expected became 300 000 elements, each failing with its own exception, and reading that
    one message took a minute on the server's only loop, every other request unanswered. An
    array is a JSON array, and reading one stops at its first few bad elements.
    """
    args = get_args(type_)
    elem = args[0] if args else Any
    try:
        handler = None if elem is Any else converter.get_structure_hook(elem)
    except RecursionError:  # a recursive type: bind late
        handler = converter.structure

    def structure(obj: Any, _: Any) -> list[Any]:
        if not isinstance(obj, list):
            raise ValueError(f"expected an array, got {_json_type(obj)}")
        if handler is None:
            return list(obj)
        out: list[Any] = []
        errors: list[Exception] = []
        for index, item in enumerate(obj):
            try:
                out.append(handler(item, elem))
            except Exception as exc:
                note = IterableValidationNote(f"Structuring {type_} @ index {index}", index, elem)
                exc.add_note(note)
                errors.append(exc)
                if len(errors) >= _PROBLEMS:
                    break
        if errors:
            raise IterableValidationError(f"While structuring {type_!r}", errors, type_)
        return out

    return structure


def _is_array(type_: Any) -> bool:
    return get_origin(type_) in (list, abc.Sequence, abc.MutableSequence)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an object" if isinstance(value, dict) else type(value).__name__


class DriverosProtocol(LanguageServerProtocol):
    """pygls' LSP protocol, with messages read at the top level only and never left unanswered."""

    def __init__(self, server: Any, converter: Converter) -> None:
        super().__init__(server, converter)
        converter.register_structure_hook_factory(
            _is_array, lambda type_: _array_of(converter, type_)
        )

    def structure_message(self, data: dict[str, Any]) -> Any:
        # called for every JSON object of a message, innermost first: leave them all plain
        return data

    def _check_handler_result(self, future: Any) -> None:
        # pygls 2.1 keeps the future of every notification's handler in _request_futures under
        # a fresh uuid and never removes it: ~2 KB per keystroke (didChange) for the server's
        # life. A notification's future is done here; forget it.
        super()._check_handler_result(future)
        for key, pending in list(self._request_futures.items()):
            if pending is future:
                del self._request_futures[key]
                break

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
            structured = self._structure(message)
        except Exception as exc:  # a client's message: refused, whatever the reason
            method = message.get("method")
            name = method if isinstance(method, str) else "message"
            self._refuse(message, JsonRpcInvalidParams(describe(name, exc)))
            return
        super().handle_message(structured)

    def _structure(self, data: dict[str, Any]) -> Any:
        """The message as pygls' types (as its ``structure_message``, without its traceback
        in the log for every message that does not fit: the answer says what is wrong)."""
        if "id" not in data:
            kind = self.get_message_type(data.get("method", "")) or JsonRPCNotification
        elif "error" in data:
            kind = ResponseErrorMessage
        elif "method" in data:
            kind = self.get_message_type(data["method"]) or JsonRPCRequestMessage
        else:
            kind = self._result_types.pop(data["id"], None) or JsonRPCResponseMessage
        return self._converter.structure(data, kind)

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        # a typed error is the answer, not a server failure: one log line, no traceback
        # (pygls logs every one of them with its traceback at ERROR)
        if not future.cancelled():
            error = future.exception()
            if isinstance(error, JsonRpcException):
                self._request_futures.pop(msg_id, None)
                message = one_line(str(error.message)) or type(error).__name__
                logger.info("answered request %r with %s: %s", msg_id, error.code, message)
                self._send_response(msg_id, error=ResponseError(code=error.code, message=message))
                return
        super()._send_handler_result(future, msg_id=msg_id)

    def _refuse(self, message: dict[str, Any], error: JsonRpcException) -> None:
        msg_id = message.get("id")
        if "method" not in message or not isinstance(msg_id, int | str) or isinstance(msg_id, bool):
            # a notification, or a response to the server: JSON-RPC has nothing to answer with
            logger.warning("ignored an unreadable message: %s", error.message)
            return
        logger.warning("refused request %r: %s", msg_id, error.message)
        self._send_response(msg_id, error=ResponseError(code=error.code, message=error.message))
