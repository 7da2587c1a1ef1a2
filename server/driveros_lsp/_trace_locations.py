"""The places a trace event names, as LSP ``Location``s the editor can open.

A semantic tool's ``tool_result`` carries ``locations`` (workspace-relative path, 1-based line
and column in characters: docs/events.md). :func:`editor_locator` turns them into
:class:`~driveros_lsp.protocol_models.TraceLocation`: the file's URI in the user's workspace
and a range in the client's position encoding, converted on the text of the line as the
editor has it (the open buffer, else the file on disk; docs/lsp-runs.md, "Position
encoding"). The range covers the identifier at the position (empty when there is none).

The paths come from the model's tool call and the language server's answer: hostile input.
A path that is absolute, climbs out with ``..``, or resolves outside the workspace (a
symbolic link) is left out, never read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from driveros_lsp._editor import Editor, document_lines
from driveros_lsp._text import Lines, Pos, PositionCodec, SomeLines
from driveros_lsp.protocol_models import TraceLocation, TracePosition, TraceRange

if TYPE_CHECKING:
    from driveros.agent import Event

#: An event's places as LSP Locations ([] when it names none).
Locate = Callable[["Event"], Awaitable[list[TraceLocation]]]


def _inside(root: Path, rel: str) -> Path | None:
    """``root / rel`` when it is a path in the workspace (resolved, links followed); None
    otherwise. Blocking (it resolves)."""
    if not rel or "\x00" in rel or any(ord(ch) < 0x20 for ch in rel):
        return None
    parts = Path(rel).parts
    if Path(rel).is_absolute() or ".." in parts:
        return None
    path = root / rel
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return None
    return path


def _line(lines: Lines | SomeLines, index: int) -> str | None:
    if isinstance(lines, dict):
        text = lines.get(index)
    else:
        text = lines[index] if 0 <= index < len(lines) else None
    return None if text is None else text.rstrip("\r\n")


def _word_end(text: str | None, start: int) -> int:
    """The end of the identifier starting at ``start`` (code points); ``start`` for none."""
    if text is None:
        return start
    end = start
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    return end


def editor_locator(editor: Editor, root: Callable[[], Path]) -> Locate:
    """The :data:`Locate` of a run whose workspace is ``root()`` (see the module docstring)."""

    async def locate(event: Event) -> list[TraceLocation]:
        if event.type != "tool_result" or not event.locations:
            return []
        base = root()
        codec = PositionCodec(editor.traits.encoding)
        wanted: dict[str, set[int]] = {}
        for place in event.locations:
            wanted.setdefault(place.path, set()).add(place.line - 1)
        files: dict[str, tuple[str, Lines | SomeLines]] = {}
        for rel, indexes in wanted.items():
            path = await asyncio.to_thread(_inside, base, rel)
            if path is not None:
                uri = path.as_uri()
                files[rel] = (uri, await document_lines(editor, uri, path, indexes))
        found: list[TraceLocation] = []
        for place in event.locations:  # in the answer's order
            if place.path not in files or place.line < 1:
                continue
            uri, lines = files[place.path]
            line, char = place.line - 1, max(place.column - 1, 0)
            end = _word_end(_line(lines, line), char)
            first, last = codec.range_to_client(lines, Pos(line, char), Pos(line, end))
            found.append(
                TraceLocation(
                    uri=uri,
                    range=TraceRange(
                        start=TracePosition(line=first.line, character=first.character),
                        end=TracePosition(line=last.line, character=last.character),
                    ),
                )
            )
        return found

    return locate
