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
