"""The identity of a diagnostic, and the fingerprint of a set of them.

Identity is ``(path, source, code, message, severity)``: the path without ``./`` or
``file://``, the message with volatile parts masked (hex addresses, durations, runs of
whitespace) and, for a failing test, reduced to its node id. Positions are left out so that
an edit which only shifts lines is not a change. This one rule serves the per-turn delta (the
``diagnostics`` event), the stuck detector and target matching.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable

from driveros.diagnostics._item import DiagnosticItem

_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds)\b")
_SPACE = re.compile(r"\s+")

#: (path, source, code, message, severity), normalised: see the module docstring.
ItemKey = tuple[str, str, str, str, str]

#: Codes whose message starts with a stable name (``node: detail``): the name is the identity,
#: so a test that keeps failing with different values is still the same failure.
NAMED_CODES = frozenset({"test-failure", "test-error"})


def normalize_message(message: str) -> str:
    """The message with volatile parts replaced, for identity and fingerprinting."""
    text = _HEX.sub("0x?", message)
    text = _DURATION.sub("<t>", text)
    return _SPACE.sub(" ", text).strip()


def normalize_path(path: str) -> str:
    """The path as tools and editors both spell it: no ``file://``, no leading ``./``."""
    p = path.strip().removeprefix("file://")
    while p.startswith("./"):
        p = p[2:]
    return p


def identity_message(item: DiagnosticItem) -> str:
    """The part of the message that identifies the problem (a failing test: its node id)."""
    message = item.message
    if item.code in NAMED_CODES:
        message = message.split(": ", 1)[0]
    return normalize_message(message)


def item_key(item: DiagnosticItem) -> ItemKey:
    """The identity of a diagnostic, independent of where in the file it sits."""
    return (
        normalize_path(item.path),
        item.source,
        item.code or "",
        identity_message(item),
        item.severity,
    )


def fingerprint(items: Iterable[DiagnosticItem], checks: Iterable[str] = ()) -> str:
    """An order-independent digest of what the tools said (positions and raw text excluded)."""
    keys = sorted(list(item_key(i)) for i in items)
    payload = json.dumps({"items": keys, "checks": sorted(set(checks))}, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:16]
