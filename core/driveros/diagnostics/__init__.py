"""Diagnostics, in one home: the item, the snapshot, identity, delta, text and positions.

    before = DiagnosticsSnapshot(fingerprint=fingerprint(items), items=items)
    delta = diff_snapshots(before, after)      # new / fixed / unchanged, matched by identity
    targets_fixed(after, targets)              # "fix this diagnostic", verified
    format_item(item)                          # path:line:col: severity [source code] message

Positions: a :class:`DiagnosticItem` is **1-based** (``0`` = unknown), as the tools print;
editors (LSP) are **0-based**. :func:`to_zero_based` and :func:`to_one_based` are the only
conversions. The agent, the feed (``driveros.intel``), the CLI and the language server all
use this package; it imports nothing of theirs. See docs/diagnostics.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Positions are all a language server needs before its first run: the pydantic models load on
# first use (see __getattr__), so ``initialize`` does not wait for them.
from driveros.diagnostics._position import (
    ColumnUnit,
    OneBasedSpan,
    ZeroBasedRange,
    code_point_index,
    code_units,
    to_one_based,
    to_zero_based,
)

if TYPE_CHECKING:
    from driveros.diagnostics._delta import DiagnosticsDelta, diff_snapshots
    from driveros.diagnostics._format import (
        format_item,
        format_items,
        render_delta,
        render_snapshot,
    )
    from driveros.diagnostics._identity import (
        ItemKey,
        fingerprint,
        item_key,
        normalize_message,
        normalize_path,
    )
    from driveros.diagnostics._item import DiagnosticItem, DiagnosticsSnapshot, Severity
    from driveros.diagnostics._targets import remaining_targets, targets_fixed

__all__ = [
    "ColumnUnit",
    "DiagnosticItem",
    "DiagnosticsDelta",
    "DiagnosticsSnapshot",
    "ItemKey",
    "OneBasedSpan",
    "Severity",
    "ZeroBasedRange",
    "code_point_index",
    "code_units",
    "diff_snapshots",
    "fingerprint",
    "format_item",
    "format_items",
    "item_key",
    "normalize_message",
    "normalize_path",
    "remaining_targets",
    "render_delta",
    "render_snapshot",
    "targets_fixed",
    "to_one_based",
    "to_zero_based",
]

_LAZY = {
    "DiagnosticsDelta": "_delta",
    "diff_snapshots": "_delta",
    "format_item": "_format",
    "format_items": "_format",
    "render_delta": "_format",
    "render_snapshot": "_format",
    "ItemKey": "_identity",
    "fingerprint": "_identity",
    "item_key": "_identity",
    "normalize_message": "_identity",
    "normalize_path": "_identity",
    "DiagnosticItem": "_item",
    "DiagnosticsSnapshot": "_item",
    "Severity": "_item",
    "remaining_targets": "_targets",
    "targets_fixed": "_targets",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
