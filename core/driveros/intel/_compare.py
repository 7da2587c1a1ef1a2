"""Comparing snapshots: a stable fingerprint, the per-turn delta, and verified target fixes.

A diagnostic's *identity* is (path, source, code, message) with volatile bits of the
message (hex addresses, durations, runs of whitespace) normalised; positions are left out
so that an edit which only shifts lines does not look like a change.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from driveros.agent._events import DiagnosticItem
from driveros.agent._hooks import DiagnosticsSnapshot

_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds)\b")
_SPACE = re.compile(r"\s+")

ItemKey = tuple[str, str, str, str]

#: Editor diagnostic sources → the check that reports the same thing here.
_SOURCE_ALIASES = {
    "pylance": "pyright",
    "basedpyright": "pyright",
    "ruff": "ruff",
    "ts": "tsc",
    "typescript": "tsc",
    "rustc": "cargo",
    "rust-analyzer": "cargo",
    "compiler": "go",
    "gopls": "go",
    "go vet": "go",
    "vet": "go",
}


def normalize_message(message: str) -> str:
    """The message with volatile parts replaced, for identity and fingerprinting."""
    text = _HEX.sub("0x?", message)
    text = _DURATION.sub("<t>", text)
    return _SPACE.sub(" ", text).strip()


#: Codes whose message starts with a stable name (``node: detail``): the name is the identity,
#: so a test that keeps failing with different values is still the same failure.
_NAMED_CODES = frozenset({"test-failure", "test-error"})


def item_key(item: DiagnosticItem) -> ItemKey:
    """The identity of a diagnostic, independent of where in the file it sits."""
    message = item.message
    if item.code in _NAMED_CODES:
        message = message.split(": ", 1)[0]
    return (_norm_path(item.path), item.source, item.code or "", normalize_message(message))


def _norm_path(path: str) -> str:
    p = path.strip().removeprefix("file://")
    while p.startswith("./"):
        p = p[2:]
    return p


def fingerprint(items: Iterable[DiagnosticItem], checks: Iterable[str] = ()) -> str:
    """An order-independent digest of what the tools said (positions and raw text excluded)."""
    keys = sorted([*item_key(i), i.severity] for i in items)
    payload = json.dumps({"items": keys, "checks": sorted(set(checks))}, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


class SnapshotDelta(BaseModel):
    """What changed between two snapshots."""

    model_config = ConfigDict(frozen=True)

    new: tuple[DiagnosticItem, ...] = ()
    fixed: tuple[DiagnosticItem, ...] = ()
    unchanged: tuple[DiagnosticItem, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.new or self.fixed)


def diff_snapshots(prev: DiagnosticsSnapshot | None, cur: DiagnosticsSnapshot) -> SnapshotDelta:
    """Match diagnostics by identity; several with one identity pair up in line order."""
    if prev is None:
        return SnapshotDelta(new=cur.items)
    before: dict[ItemKey, list[DiagnosticItem]] = defaultdict(list)
    after: dict[ItemKey, list[DiagnosticItem]] = defaultdict(list)
    for item in prev.items:
        before[item_key(item)].append(item)
    for item in cur.items:
        after[item_key(item)].append(item)
    new: list[DiagnosticItem] = []
    fixed: list[DiagnosticItem] = []
    unchanged: list[DiagnosticItem] = []
    for key in sorted(set(before) | set(after)):
        old = sorted(before.get(key, []), key=lambda d: (d.line, d.column))
        now = sorted(after.get(key, []), key=lambda d: (d.line, d.column))
        paired = min(len(old), len(now))
        unchanged.extend(now[:paired])
        new.extend(now[paired:])
        fixed.extend(old[paired:])
    return SnapshotDelta(new=tuple(new), fixed=tuple(fixed), unchanged=tuple(unchanged))


def _check_base(name: str) -> str:
    return name.split(":", 1)[0].lower()


def _verifiable(snapshot: DiagnosticsSnapshot, target: DiagnosticItem) -> bool:
    """Whether a check that could report ``target`` ran for this snapshot."""
    if not target.source:
        return bool(snapshot.checks)
    source = target.source.strip().lower()
    wanted = _SOURCE_ALIASES.get(source, source)
    ran = {_check_base(c) for c in snapshot.checks} | {i.source.lower() for i in snapshot.items}
    return wanted in ran


def _matches(item: DiagnosticItem, target: DiagnosticItem, tolerance: int, shift: int) -> bool:
    if _norm_path(item.path) != _norm_path(target.path):
        return False
    if target.code and (item.code or "") != target.code:
        return False
    same_message = item_key(item)[3] == item_key(target)[3]
    if target.code in _NAMED_CODES:
        return same_message  # the same test, wherever in it the assertion now fails
    if not target.code and not same_message:
        return False
    if target.line <= 0 or item.line <= 0:
        return same_message or bool(target.code)
    distance = abs(item.line - target.line)
    # the same wording may have moved with edits above it; other wording must stay put
    return distance <= (shift if same_message else tolerance)


def remaining_targets(
    snapshot: DiagnosticsSnapshot,
    targets: Sequence[DiagnosticItem],
    *,
    line_tolerance: int = 2,
    shift_tolerance: int = 25,
) -> tuple[DiagnosticItem, ...]:
    """The targets still present in ``snapshot``, or that no check in it could have seen."""
    left = []
    for target in targets:
        if not _verifiable(snapshot, target) or any(
            _matches(item, target, line_tolerance, shift_tolerance) for item in snapshot.items
        ):
            left.append(target)
    return tuple(left)


def targets_fixed(
    snapshot: DiagnosticsSnapshot,
    targets: Sequence[DiagnosticItem],
    *,
    line_tolerance: int = 2,
    shift_tolerance: int = 25,
) -> bool:
    """True only when every target is verifiably gone from ``snapshot``.

    A target matches a diagnostic with the same path and code (when the target has one) and
    either the same message within ``shift_tolerance`` lines or any message within
    ``line_tolerance`` lines. A target whose source no check of the snapshot covers (say
    an editor's Pylance diagnostic when only mypy ran) counts as not fixed: unverifiable.
    """
    if not targets:
        return False
    return not remaining_targets(
        snapshot, targets, line_tolerance=line_tolerance, shift_tolerance=shift_tolerance
    )


def format_item(item: DiagnosticItem) -> str:
    """``path:line:col: severity [source code] message`` (first line of the message)."""
    where = item.path or "."
    if item.line:
        where += f":{item.line}" + (f":{item.column}" if item.column else "")
    tag = " ".join(p for p in (item.source, item.code or "") if p)
    first = item.message.splitlines()[0] if item.message else ""
    return f"{where}: {item.severity} [{tag}] {first}"


def render_snapshot(
    snapshot: DiagnosticsSnapshot, delta: SnapshotDelta | None = None, *, limit: int = 50
) -> str:
    """A compact text view for the model (the ``diagnostics`` tool's output)."""
    counts: dict[str, int] = defaultdict(int)
    for item in snapshot.items:
        counts[item.severity] += 1
    head = ", ".join(f"{n} {sev}{'s' if n != 1 else ''}" for sev, n in sorted(counts.items()))
    checks = ", ".join(snapshot.checks) or "none"
    lines = [f"checks: {checks}; {head or 'no diagnostics'} (fingerprint {snapshot.fingerprint})"]
    if delta is not None:
        lines.append(
            f"since last snapshot: {len(delta.new)} new, {len(delta.fixed)} fixed, "
            f"{len(delta.unchanged)} unchanged"
        )
        lines += [f"fixed: {format_item(i)}" for i in delta.fixed[:limit]]
        lines += [f"new: {format_item(i)}" for i in delta.new[:limit]]
    ordered = sorted(snapshot.items, key=lambda i: (i.severity != "error", i.path, i.line))
    lines += [format_item(i) for i in ordered[:limit]]
    if len(ordered) > limit:
        lines.append(f"... and {len(ordered) - limit} more")
    if snapshot.raw:
        lines.append("unparsed tool output:")
        lines.append(snapshot.raw[:4000])
    return "\n".join(lines)
