"""Showing a command to a human: what it is, never what a terminal would make of it."""

from __future__ import annotations

#: Printable by Python's rules but blank or invisible on a terminal: Hangul fillers, the
#: combining grapheme joiner, invisible Khmer vowels, the Braille blank, variation selectors.
_INVISIBLE = frozenset(
    {0x115F, 0x1160, 0x3164, 0xFFA0, 0x034F, 0x17B4, 0x17B5, 0x2800}
    | set(range(0xFE00, 0xFE10))
    | set(range(0xE0100, 0xE01F0))
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(ch: str) -> str:
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def display_command(text: str) -> str:
    """``text`` with every character a terminal would not show as itself escaped.

    C0 and C1 controls and DEL (``\\r``, ``\\n``, ``\\t``, ``\\x1b``, ``\\x9b``, ...), bidi
    overrides and isolates (U+202A-U+202E, U+2066-U+2069), zero-width and other format
    characters, line and paragraph separators, every space other than U+0020, surrogates,
    private-use and unassigned code points, and a few printable-but-blank ones become
    Python-style escapes (``\\x..``, ``\\u....``, ``\\U........``). Nothing is shortened:
    the result is the whole text on one line. Backslashes are kept as they are, so a shell
    command reads as typed. Every place driveros shows a command to a person uses this (the
    terminal prompt, the CLI trace, the editors' questions).
    """
    return "".join(
        ch if (ch == " " or ch.isprintable()) and ord(ch) not in _INVISIBLE else _escape(ch)
        for ch in text
    )
