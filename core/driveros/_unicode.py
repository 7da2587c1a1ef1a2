"""Text that can always be encoded: lone surrogates become visible escapes.

Python smuggles undecodable bytes through ``str`` as lone surrogates (``surrogateescape``:
argv, file names, ``os.listdir``), and ``json.loads`` turns a ``"\\udcff"`` escape from a
model into one as well. UTF-8 cannot encode them, so every JSON document, HTTP body and
stdout line would fail on them. ``printable`` keeps the information and drops the hazard:
an escaped byte ``\\udcff`` becomes the four characters ``\\xff``, any other lone surrogate
``\\ud800`` its six-character escape.
"""

from __future__ import annotations

import re
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that surrogateescape could not decode
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every lone surrogate replaced by its escape (the same object if none)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub(_escape, text)
    return text


def printable_data(value: Any) -> Any:
    """:func:`printable` applied to every string (keys too) of a JSON-like structure."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_data(k): printable_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable_data(v) for v in value]
    if isinstance(value, tuple):
        return tuple(printable_data(v) for v in value)
    return value


#: What a terminal or an editor would act on instead of showing: C0 controls but newline and
#: tab, DEL, C1 controls (``\x9b`` is CSI), bidi marks, embeddings, overrides and isolates,
#: line and paragraph separators, interlinear annotations, tag characters (invisible text),
#: lone surrogates. Every one of them is non-printable by Python's rules.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    "\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]"
)
_NAMED = {"\r": "\\r", "\x1b": "\\x1b"}


def _escape_unsafe(match: re.Match[str]) -> str:
    ch = match.group()
    code = ord(ch)
    if 0xD800 <= code <= 0xDFFF:
        return _escape(match)
    if code <= 0xFF:
        return _NAMED.get(ch, f"\\x{code:02x}")
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def terminal_safe(text: str) -> str:
    """Untrusted text (a model's answer, a commit message, a council verdict, an issue) made
    safe to print to a terminal or write to a file a person reads.

    Newlines and tabs stay; ``\\r\\n`` becomes ``\\n``; every character of ``_UNSAFE`` (escape
    sequences, OSC 8 links, a lone ``\\r``, BEL, DEL, C1, bidi overrides and isolates, ...)
    becomes a visible Python-style escape (``\\x1b``, ``\\u202e``). Printable text is returned
    unchanged (the same object when nothing needed escaping), and the result is a fixed
    point: escaping it again changes nothing.
    """
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escape_unsafe, text)


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code > 0xFFFF:  # a UTF-16 surrogate pair, as JSON spells characters beyond the BMP
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def json_terminal_safe(document: str) -> str:
    """A JSON document with every ``_UNSAFE`` character written as a ``\\u`` escape.

    JSON encoders escape C0 controls but leave DEL, C1, bidi controls and the like raw; such a
    character can only stand inside a string, where its escape decodes to the very same
    character. So the data is unchanged for any parser and the text is safe on a terminal.
    """
    if _UNSAFE.search(document) is None:
        return document
    return _UNSAFE.sub(_json_escape, document)
