"""Diagnostics, in one home: the item, the snapshot, identity, delta, text and positions.

    before = DiagnosticsSnapshot(fingerprint=fingerprint(items), items=items)
    delta = diff_snapshots(before, after)      # new / fixed / unchanged, matched by identity
    targets_fixed(after, targets)              # "fix this diagnostic", verified
    format_item(item)                          # path:line:col: severity [source code] message

Positions: a :class:`DiagnosticItem` is **1-based** (``0`` = unknown), as the tools print;
editors (LSP) are **0-based**. :func:`to_zero_based` and :func:`to_one_based` are the only
conversions. The agent, the feed (``driveros.intel``), the CLI and the language server all
use this package; it imports nothing of theirs. See docs/intel.md, "Diagnostics".
"""

from driveros.diagnostics._delta import DiagnosticsDelta, diff_snapshots
from driveros.diagnostics._format import format_item, format_items, render_delta, render_snapshot
from driveros.diagnostics._identity import (
    ItemKey,
    fingerprint,
    item_key,
    normalize_message,
    normalize_path,
)
from driveros.diagnostics._item import DiagnosticItem, DiagnosticsSnapshot, Severity
from driveros.diagnostics._position import (
    ColumnUnit,
    OneBasedSpan,
    ZeroBasedRange,
    code_point_index,
    code_units,
    to_one_based,
    to_zero_based,
)
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
