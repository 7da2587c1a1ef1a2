"""Verified target fixes: is a diagnostic the user asked to fix still there?

Matching a target is looser than identity: an editor spells paths and sources its own way
(``./a.py``, ``Pylance``) and may not know the code, and a message may be reworded by the
very edit that did not fix it. So a target matches an item with the same path and code (when
the target has one) and either the same identity message within ``shift_tolerance`` lines or
any message within ``line_tolerance`` lines; a failing test matches its node id anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

from driveros.diagnostics._identity import NAMED_CODES, identity_message, normalize_path
from driveros.diagnostics._item import DiagnosticItem, DiagnosticsSnapshot

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
    if normalize_path(item.path) != normalize_path(target.path):
        return False
    if target.code and (item.code or "") != target.code:
        return False
    same_message = identity_message(item) == identity_message(target)
    if target.code in NAMED_CODES:
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

    No targets: false (nothing was verified). A target whose source no check of the snapshot
    covers (say an editor's eslint diagnostic when only mypy ran) counts as not fixed.
    """
    if not targets:
        return False
    return not remaining_targets(
        snapshot, targets, line_tolerance=line_tolerance, shift_tolerance=shift_tolerance
    )
