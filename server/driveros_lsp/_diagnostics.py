"""The build diagnostics a run's feed found in its scratch copy, shown as the run's own.

A ``diagnostics`` event carries what is new and what was fixed since the previous snapshot;
the board keeps each run's current set per file and publishes, per document, the union over
all runs (``source: "driveros"``). A finished run's diagnostics are cleared. A fixed item is
matched to a shown one by ``driveros.diagnostics`` identity (positions left out, as in the
delta), so a diagnostic that moved before it was fixed is still taken down. Event positions
are 1-based, LSP's 0-based: ``driveros.diagnostics.to_zero_based`` converts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from driveros.diagnostics import DiagnosticItem, item_key, to_zero_based
from driveros_lsp.protocol import DIAGNOSTIC_SOURCE

if TYPE_CHECKING:
    from driveros.agent import Diagnostics
    from driveros_lsp._editor import Editor

_SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "information": lsp.DiagnosticSeverity.Information,
    "hint": lsp.DiagnosticSeverity.Hint,
}


@dataclass(frozen=True)
class _Shown:
    uri: str
    item: DiagnosticItem
    diagnostic: lsp.Diagnostic


def _uri(root: Path, path: str) -> str | None:
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.relative_to(root)
        except ValueError:
            return None
    return (root / p).as_uri()


def to_lsp(item: DiagnosticItem, run_id: str) -> lsp.Diagnostic:
    r = to_zero_based(item)
    origin = f" ({item.source})" if item.source else ""
    return lsp.Diagnostic(
        range=lsp.Range(
            start=lsp.Position(line=r.start_line, character=r.start_character),
            end=lsp.Position(line=r.end_line, character=r.end_character),
        ),
        message=f"{item.message}{origin}",
        severity=_SEVERITY.get(item.severity, lsp.DiagnosticSeverity.Error),
        code=item.code,
        source=DIAGNOSTIC_SOURCE,
        data={"runId": run_id},
    )


def _take_down(shown: list[_Shown], fixed: DiagnosticItem) -> str | None:
    """Remove the shown diagnostic ``fixed`` stands for (same identity; the same position
    first); its uri, or None when none is shown."""
    key = item_key(fixed)
    same = [i for i, s in enumerate(shown) if item_key(s.item) == key]
    if not same:
        return None
    exact = [
        i for i in same if (shown[i].item.line, shown[i].item.column) == (fixed.line, fixed.column)
    ]
    return shown.pop((exact or same)[-1]).uri


class DiagnosticsBoard:
    def __init__(self, server: Editor) -> None:
        self._server = server
        self._runs: dict[str, list[_Shown]] = {}

    def update(self, run_id: str, event: Diagnostics, root: Path) -> None:
        shown = self._runs.setdefault(run_id, [])
        touched: set[str] = set()
        for fixed in event.fixed:
            uri = _take_down(shown, fixed)
            if uri is not None:
                touched.add(uri)
        for item in event.new:
            uri = _uri(root, item.path)
            if uri is None:
                continue
            shown.append(_Shown(uri, item, to_lsp(item, run_id)))
            touched.add(uri)
        self._publish(touched)

    def clear(self, run_id: str) -> None:
        gone = self._runs.pop(run_id, [])
        self._publish({s.uri for s in gone})

    def _publish(self, uris: set[str]) -> None:
        for uri in sorted(uris):
            items = [s.diagnostic for run in self._runs.values() for s in run if s.uri == uri]
            self._server.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=uri, diagnostics=items)
            )
