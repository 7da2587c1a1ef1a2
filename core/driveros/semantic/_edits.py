"""A server's WorkspaceEdit applied to the run's workspace through the sandbox's fence."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from driveros.sandbox import Sandbox
from driveros.semantic._client import LanguageServerError
from driveros.semantic._positions import to_chars, uri_path

if TYPE_CHECKING:
    from driveros.semantic._session import ServerSession


def _text_edits(edit: Any) -> dict[str, list[dict[str, Any]]]:
    """uri → TextEdits of a WorkspaceEdit; resource operations are refused."""
    out: dict[str, list[dict[str, Any]]] = {}
    if not isinstance(edit, dict):
        raise LanguageServerError("the language server's edit is not a WorkspaceEdit")
    for change in edit.get("documentChanges") or []:
        if not isinstance(change, dict) or "kind" in change:
            raise LanguageServerError(
                "the language server's rename creates, renames or deletes files; not applied"
            )
        uri = (change.get("textDocument") or {}).get("uri")
        if isinstance(uri, str):
            out.setdefault(uri, []).extend(
                e for e in change.get("edits", []) if isinstance(e, dict)
            )
    if not out:
        for uri, edits in (edit.get("changes") or {}).items():
            out.setdefault(str(uri), []).extend(e for e in edits if isinstance(e, dict))
    return out


def _offset(lines: list[str], pos: Any, encoding: str) -> int:
    row = int(pos.get("line", 0))
    if row >= len(lines):
        return sum(len(x) for x in lines)
    line = lines[row]
    char = to_chars(line.rstrip("\r\n"), int(pos.get("character", 0)), encoding)
    return sum(len(x) for x in lines[:row]) + min(char, len(line.rstrip("\r\n")))


def _where(lines: list[str], pos: Any, encoding: str) -> tuple[int, int]:
    """The 1-based line and column (characters) of a position in the text before the edit."""
    row = int(pos.get("line", 0))
    if row >= len(lines):
        return row + 1, 1
    line = lines[row].rstrip("\r\n")
    return row + 1, min(to_chars(line, int(pos.get("character", 0)), encoding), len(line)) + 1


def apply_text_edits(
    text: str, edits: list[dict[str, Any]], encoding: str
) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with ``edits`` applied (non-overlapping, as LSP requires) and where they
    start in ``text`` (1-based line and column, sorted)."""
    lines = text.splitlines(keepends=True) or [""]
    spans = []
    for e in edits:
        rng = e.get("range", {})
        start = _offset(lines, rng.get("start", {}), encoding)
        end = _offset(lines, rng.get("end", {}), encoding)
        if end < start:
            raise LanguageServerError("the language server's edit has a reversed range")
        at = _where(lines, rng.get("start", {}), encoding)
        spans.append((start, end, str(e.get("newText", "")), at))
    spans.sort(key=lambda s: (s[0], s[1]))
    for (_, end_a, _, _), (start_b, _, _, _) in itertools.pairwise(spans):
        if start_b < end_a:
            raise LanguageServerError("the language server's edits overlap; not applied")
    for start, end, new, _ in reversed(spans):
        text = text[:start] + new + text[end:]
    return text, sorted({s[3] for s in spans})


def edited_paths(session: ServerSession, edit: Any) -> list[str]:
    """The workspace-relative paths a WorkspaceEdit changes, in its order (those outside the
    workspace left out: applying refuses them)."""
    found = []
    for uri in _text_edits(edit):
        rel, inside = uri_path(session.root, uri)
        if inside:
            found.append(rel)
    return found


async def apply_workspace_edit(
    sandbox: Sandbox, session: ServerSession, edit: Any
) -> dict[str, list[tuple[int, int]]]:
    """Apply ``edit`` to the workspace (every file computed first, then written through the
    fence); path → where its edits start (1-based line and column, before the edit). Nothing
    is written when any file is outside the workspace or the edit does not apply."""
    planned: dict[str, tuple[str, list[tuple[int, int]]]] = {}
    for uri, edits in _text_edits(edit).items():
        rel, inside = uri_path(session.root, uri)
        if not inside:
            raise LanguageServerError(
                f"the language server's edit touches {rel}, outside the workspace; not applied"
            )
        old = await sandbox.read_file(rel)
        new, starts = apply_text_edits(old, edits, session.encoding)
        if new != old:
            planned[rel] = (new, starts)
    for rel, (new, _) in planned.items():
        await sandbox.write_file(rel, new)
    return {rel: starts for rel, (_, starts) in planned.items()}
