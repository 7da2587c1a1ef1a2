"""The build diagnostics a run's feed found in its scratch copy, shown as the run's own.

A ``diagnostics`` event carries what is new and what was fixed since the previous snapshot;
the board keeps each run's current set per file and publishes, per document, the union over
all runs (``source: "driveros"``). A finished run's diagnostics are cleared. A fixed item is
matched to a shown one by ``driveros.diagnostics`` identity (positions left out, as in the
delta), so a diagnostic that moved before it was fixed is still taken down. Event positions
are 1-based, LSP's 0-based: ``driveros.diagnostics.to_zero_based`` converts. Item columns
count code points, the client counts code units of the negotiated encoding: the range is
converted by :class:`~driveros_lsp._text.PositionCodec` on the document as the editor has it
(the open buffer, else the file on disk, read off the event loop), so the diagnostic marks
the same characters in every encoding. Updates are applied in the order they came.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from driveros.diagnostics import DiagnosticItem, item_key, to_zero_based
from driveros_lsp._editor import document_lines
from driveros_lsp._text import Lines, Pos, PositionCodec, SomeLines
from driveros_lsp.protocol import DIAGNOSTIC_SOURCE

logger = logging.getLogger(__name__)

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


def _path(root: Path, path: str) -> Path | None:
    p = Path(path)
    if p.is_absolute():
        try:
            p = p.relative_to(root)
        except ValueError:
            return None
    return root / p


def to_lsp(
    item: DiagnosticItem,
    run_id: str,
    codec: PositionCodec | None = None,
    lines: Lines | SomeLines | None = None,
) -> lsp.Diagnostic:
    """The item as an LSP diagnostic; ``lines`` is the document (:func:`split_lines`) its
    columns are converted on, into ``codec``'s encoding (utf-16 by default)."""
    r = to_zero_based(item)
    start, end = (codec or PositionCodec()).range_to_client(
        lines, Pos(r.start_line, r.start_character), Pos(r.end_line, r.end_character)
    )
    origin = f" ({item.source})" if item.source else ""
    return lsp.Diagnostic(
        range=lsp.Range(
            start=lsp.Position(line=start.line, character=start.character),
            end=lsp.Position(line=end.line, character=end.character),
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
        self._tasks: set[asyncio.Future[None]] = set()
        self._last: asyncio.Future[None] | None = None

    def update(self, run_id: str, event: Diagnostics, root: Path) -> None:
        self._queue(self._update(run_id, event, root))

    def clear(self, run_id: str) -> None:
        self._queue(self._clear(run_id))

    def replace(self, key: str, items: list[DiagnosticItem], root: Path) -> None:
        """Show ``items`` under ``key`` in place of what ``key`` showed: a standing set (the
        workspace's own diagnostics), published with the runs' as one union per document."""
        self._queue(self._replace(key, items, root))

    async def idle(self) -> None:
        """Wait until every update and clear given so far is published."""
        while self._last is not None and not self._last.done():
            await asyncio.wait([self._last])

    async def aclose(self) -> None:
        """Drop the updates not yet published (the session is ending)."""
        tasks, self._tasks, self._last = self._tasks, set(), None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _queue(self, step: Coroutine[Any, Any, None]) -> None:
        previous = self._last

        async def after() -> None:
            try:
                if previous is not None:
                    await asyncio.wait([previous])
                await step
            except Exception:  # one bad update never blocks the ones after it
                logger.exception("diagnostics board: update failed")
            finally:
                step.close()  # never awaited when canceled first

        task = asyncio.ensure_future(after())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self._last = task

    async def _update(self, run_id: str, event: Diagnostics, root: Path) -> None:
        shown = self._runs.setdefault(run_id, [])
        touched: set[str] = set()
        for fixed in event.fixed:
            uri = _take_down(shown, fixed)
            if uri is not None:
                touched.add(uri)
        codec = PositionCodec(self._server.traits.encoding)
        documents: dict[str, Lines | SomeLines] = {}
        for item in event.new:
            path = _path(root, item.path)
            if path is None:
                continue
            uri = path.as_uri()
            if uri not in documents:
                spans = [to_zero_based(o) for o in event.new if o.path == item.path]
                wanted = {n for r in spans for n in (r.start_line, r.end_line)}
                documents[uri] = await document_lines(self._server, uri, path, wanted)
            shown.append(_Shown(uri, item, to_lsp(item, run_id, codec, documents[uri])))
            touched.add(uri)
        self._publish(touched)

    async def _replace(self, key: str, items: list[DiagnosticItem], root: Path) -> None:
        touched = {s.uri for s in self._runs.pop(key, [])}
        shown: list[_Shown] = []
        codec = PositionCodec(self._server.traits.encoding)
        documents: dict[str, Lines | SomeLines] = {}
        for item in items:
            path = _path(root, item.path)
            if path is None:
                continue
            uri = path.as_uri()
            if uri not in documents:
                spans = [to_zero_based(o) for o in items if o.path == item.path]
                wanted = {n for r in spans for n in (r.start_line, r.end_line)}
                documents[uri] = await document_lines(self._server, uri, path, wanted)
            shown.append(_Shown(uri, item, to_lsp(item, key, codec, documents[uri])))
            touched.add(uri)
        self._runs[key] = shown
        self._publish(touched)

    async def _clear(self, run_id: str) -> None:
        gone = self._runs.pop(run_id, [])
        self._publish({s.uri for s in gone})

    def _publish(self, uris: set[str]) -> None:
        for uri in sorted(uris):
            items = [s.diagnostic for run in self._runs.values() for s in run if s.uri == uri]
            self._server.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=uri, diagnostics=items)
            )
