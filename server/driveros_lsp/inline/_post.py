"""Post-processing of a raw completion before it becomes ghost text.

What the model wrote is hostile input like any other: it is only ever inserted at the cursor
(the item's range is empty), and it is trimmed so that accepting it does not duplicate the
text after the cursor. :func:`clean` applies, in order: the current line's indentation is not
repeated, a single line only where the cursor's line goes on, the completion stops before it
re-types the next line of the suffix, brackets it opened are closed only when the rest of the
file does not close them, and no tail of it repeats the start of the suffix. Before all that,
characters that would hide what the text does are dropped: C0 controls but tab and newline,
DEL, and the bidirectional overrides and isolates of "Trojan Source" (CVE-2021-42574).
"""

from __future__ import annotations

import re

_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_PAIRS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = frozenset(")]}")
#: Characters whose one-character overlap with the suffix is a duplicate (a lone letter is not).
_SHORT_DUPLICATES = frozenset(")]}\"'`;,:")
#: A suffix line shorter than this (stripped) is too common to mark where a completion ends.
_MIN_ANCHOR = 4


def visible(text: str) -> str:
    """``text`` without the characters that hide what code does (see the module)."""
    return _HIDDEN.sub("", text)


def _unclosed(text: str) -> list[str]:
    """The closers ``text`` still owes, innermost first (string contents are skipped)."""
    stack: list[str] = []
    quote: str | None = None
    escaped = False
    for ch in text:
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'`":
            quote = ch
        elif ch in _PAIRS:
            stack.append(_PAIRS[ch])
        elif ch in _CLOSERS:
            if stack and stack[-1] == ch:
                stack.pop()
            else:
                return []  # it closes something of the prefix: not ours to balance
    if quote is not None:
        return []
    return stack[::-1]


def duplicate_overlap(text: str, suffix: str) -> int:
    """The length of the longest tail of ``text`` that repeats the start of ``suffix`` and
    counts as a duplicate (some non-blank text; three characters or more, or only closers and
    punctuation); 0 when none."""
    for k in range(min(len(text), len(suffix)), 0, -1):
        head = suffix[:k]
        if not text.endswith(head):
            continue
        core = head.strip()
        if not core:
            continue
        if k >= 3 or all(c in _SHORT_DUPLICATES for c in core):
            return k
    return 0


def _cut_at_anchor(text: str, suffix: str) -> str:
    """``text`` up to the line where it starts re-typing the suffix's next non-blank line."""
    anchor = next((line.strip() for line in suffix.split("\n")[1:] if line.strip()), "")
    if len(anchor) < _MIN_ANCHOR:
        return text
    lines = text.split("\n")
    for index in range(1, len(lines)):
        if lines[index].strip() == anchor:
            return "\n".join(lines[:index]).rstrip(" \t")
    return text


def clean(text: str, *, prefix: str, suffix: str) -> str:
    """``text`` (the model's completion at the cursor between ``prefix`` and ``suffix``),
    trimmed as the module says. May return ''."""
    text = visible(text.replace("\r\n", "\n"))
    if not text:
        return ""
    line_prefix = prefix[prefix.rfind("\n") + 1 :]
    line_suffix = suffix.split("\n", 1)[0]
    if line_prefix and not line_prefix.strip() and text.startswith(line_prefix):
        rest = text[len(line_prefix) :]
        if rest[:1] and not rest[:1].isspace():
            text = rest  # the model re-typed the indentation the line already has
    if line_suffix.strip():
        text = text.split("\n", 1)[0]  # the line goes on after the cursor: one line only
    text = _cut_at_anchor(text, suffix)
    if "\n" not in text and not line_suffix.strip():
        owed = _unclosed(text)
        head = suffix.lstrip(" \t")[:1]
        if owed and head not in _CLOSERS:
            text += "".join(owed)
    while (k := duplicate_overlap(text, suffix)) > 0:
        text = text[:-k]
    if not suffix or suffix.startswith("\n"):
        text = text.rstrip(" \t")
    return text
