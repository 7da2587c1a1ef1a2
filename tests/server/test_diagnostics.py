"""The diagnostics board: a run's build diagnostics, published per document in LSP positions."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from lsprotocol import types as lsp

from driveros.agent import Diagnostics
from driveros.diagnostics import DiagnosticItem, diff_snapshots, fingerprint
from driveros.diagnostics import DiagnosticsSnapshot as Snapshot
from driveros_lsp._diagnostics import DiagnosticsBoard, to_lsp
from driveros_lsp._editor import ClientTraits


class Published:
    """Records what the board publishes (the stand-in for the client's side of the wire)."""

    def __init__(self, encoding: str = "utf-16") -> None:
        self.last: dict[str, list[lsp.Diagnostic]] = {}
        self.traits = ClientTraits(encoding=cast(Any, encoding))
        self.workspace = SimpleNamespace(text_documents={})

    def text_document_publish_diagnostics(self, params: lsp.PublishDiagnosticsParams) -> None:
        self.last[params.uri] = list(params.diagnostics)


def snap(*items: DiagnosticItem) -> Snapshot:
    return Snapshot(fingerprint=fingerprint(items, ["mypy"]), items=items, checks=("mypy",))


def event(turn: int, prev: Snapshot | None, cur: Snapshot) -> Diagnostics:
    delta = diff_snapshots(prev, cur)
    return Diagnostics(
        run_id="r1",
        turn=turn,
        fingerprint=cur.fingerprint,
        total=delta.total,
        new=list(delta.new),
        fixed=list(delta.fixed),
        unchanged=len(delta.unchanged),
    )


ERR = DiagnosticItem(path="a.py", line=3, column=5, code="misc", source="mypy", message="bad")


def test_to_lsp_is_zero_based() -> None:
    d = to_lsp(ERR.model_copy(update={"end_line": 3, "end_column": 9}), "r1")
    assert (d.range.start.line, d.range.start.character) == (2, 4)
    assert (d.range.end.line, d.range.end.character) == (2, 8)
    assert d.source == "driveros" and d.message == "bad (mypy)" and d.data == {"runId": "r1"}


async def test_a_diagnostic_that_moved_before_it_was_fixed_is_taken_down(tmp_path: Path) -> None:
    """The fixed item carries its latest position, the board showed the first one: matching
    by position left it on screen until the run ended."""
    published = Published()
    board = DiagnosticsBoard(cast(Any, published))
    uri = (tmp_path / "a.py").as_uri()
    moved = ERR.model_copy(update={"line": 9})  # an import added above it
    first, second, third = snap(ERR), snap(moved), snap()
    board.update("r1", event(1, None, first), tmp_path)
    await board.idle()
    assert [d.range.start.line for d in published.last[uri]] == [2]
    board.update("r1", event(2, first, second), tmp_path)  # unchanged: nothing published
    board.update("r1", event(3, second, third), tmp_path)
    await board.idle()
    assert published.last[uri] == []


async def test_a_finished_run_clears_its_diagnostics_and_keeps_others(tmp_path: Path) -> None:
    published = Published()
    board = DiagnosticsBoard(cast(Any, published))
    uri = (tmp_path / "a.py").as_uri()
    board.update("r1", event(1, None, snap(ERR)), tmp_path)
    board.update("r2", event(1, None, snap(ERR)), tmp_path)
    await board.idle()
    assert len(published.last[uri]) == 2
    board.clear("r1")
    await board.idle()
    assert [d.data for d in published.last[uri]] == [{"runId": "r2"}]
