"""The build diagnostics a run's feed found in its scratch copy, shown as the run's own.

A ``diagnostics`` event carries what is new and what was fixed since the previous snapshot;
the board keeps each run's current set per file and publishes, per document, the union over
all runs (``source: "driveros"``). A finished run's diagnostics are cleared. Event positions
are 1-based line/column (as the tools print them); LSP positions are 0-based.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from driveros_lsp.protocol import DIAGNOSTIC_SOURCE

if TYPE_CHECKING:
    from driveros_lsp._server import DriverosLanguageServer

_SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "information": lsp.DiagnosticSeverity.Information,
    "hint": lsp.DiagnosticSeverity.Hint,
}

_Key = tuple[str, int, int, str]


def _key(item: Any) -> _Key:
    return (str(item.path), int(item.line), int(item.column), str(item.message))


def _uri(root: Path, path: str) -> str | None:
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.relative_to(root)
        except ValueError:
            return None
    return (root / p).as_uri()


def to_lsp(item: Any, run_id: str) -> lsp.Diagnostic:
    line = max(int(item.line) - 1, 0)
    col = max(int(item.column) - 1, 0)
    end_line = max(int(item.end_line) - 1, line) if item.end_line else line
    end_col = max(int(item.end_column) - 1, 0) if item.end_column else col + 1
    if end_line == line:
        end_col = max(end_col, col)
    origin = f" ({item.source})" if item.source else ""
    return lsp.Diagnostic(
        range=lsp.Range(
            start=lsp.Position(line=line, character=col),
            end=lsp.Position(line=end_line, character=end_col),
        ),
        message=f"{item.message}{origin}",
        severity=_SEVERITY.get(str(item.severity), lsp.DiagnosticSeverity.Error),
        code=item.code,
        source=DIAGNOSTIC_SOURCE,
        data={"runId": run_id},
    )


class DiagnosticsBoard:
    def __init__(self, server: DriverosLanguageServer) -> None:
        self._server = server
        self._runs: dict[str, dict[_Key, tuple[str, lsp.Diagnostic]]] = {}

    def update(self, run_id: str, event: Any, root: Path) -> None:
        current = self._runs.setdefault(run_id, {})
        touched: set[str] = set()
        for item in getattr(event, "fixed", ()):
            entry = current.pop(_key(item), None)
            if entry is not None:
                touched.add(entry[0])
        for item in getattr(event, "new", ()):
            uri = _uri(root, str(item.path))
            if uri is None:
                continue
            current[_key(item)] = (uri, to_lsp(item, run_id))
            touched.add(uri)
        self._publish(touched)

    def clear(self, run_id: str) -> None:
        gone = self._runs.pop(run_id, {})
        self._publish({uri for uri, _ in gone.values()})

    def _publish(self, uris: set[str]) -> None:
        for uri in sorted(uris):
            items = [diag for run in self._runs.values() for (u, diag) in run.values() if u == uri]
            self._server.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=uri, diagnostics=items)
            )
