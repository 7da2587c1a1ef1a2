"""The same language server asked directly (on the host, through pygls' own client): what
driveros's semantic tools must answer."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from driveros.semantic import DEFAULT_SERVERS, ServerSpec

NPM_BIN = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "driveros/lsp-servers"
SEARCH = os.pathsep.join(
    [str(Path(sys.executable).parent), str(NPM_BIN / "node_modules/.bin"), os.environ["PATH"]]
)


def spec(name: str) -> ServerSpec:
    return next(s for s in DEFAULT_SERVERS if s.name == name)


def program(name: str) -> str:
    """The server's program on the host; skipped when not installed (CI installs all three:
    .ci/run, scripts/install-language-servers.sh), failed under DRIVEROS_CI."""
    found = shutil.which(spec(name).command[0], path=SEARCH)
    if found is None:
        if os.environ.get("DRIVEROS_CI"):
            pytest.fail(f"{name} is not installed")
        pytest.skip(f"{name} is not installed")
    return found


Place = tuple[str, int, int]


class Oracle:
    """One server started directly on ``root``."""

    def __init__(self, name: str, root: Path) -> None:
        self.spec = spec(name)
        self.root = root
        self.client = LanguageClient("oracle", "1")
        self._program = program(name)

    async def __aenter__(self) -> Oracle:
        await self.client.start_io(self._program, *self.spec.command[1:], cwd=str(self.root))
        await self.client.initialize_async(
            lsp.InitializeParams(
                capabilities=lsp.ClientCapabilities(
                    workspace=lsp.WorkspaceClientCapabilities(
                        workspace_edit=lsp.WorkspaceEditClientCapabilities(document_changes=True)
                    ),
                    text_document=lsp.TextDocumentClientCapabilities(
                        hover=lsp.HoverClientCapabilities(
                            content_format=[lsp.MarkupKind.Markdown, lsp.MarkupKind.PlainText]
                        )
                    ),
                ),
                root_uri=self.root.as_uri(),
                workspace_folders=[lsp.WorkspaceFolder(uri=self.root.as_uri(), name="ws")],
            )
        )
        self.client.initialized(lsp.InitializedParams())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()

    def open(self, rel: str) -> None:
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(
                    uri=(self.root / rel).as_uri(),
                    language_id=self.spec.language_id(rel),
                    version=1,
                    text=(self.root / rel).read_text(),
                )
            )
        )

    def _doc(self, rel: str, line: int, column: int) -> dict[str, Any]:
        # ASCII sources: 1-based character columns are the server's 0-based units plus one.
        return {
            "text_document": lsp.TextDocumentIdentifier(uri=(self.root / rel).as_uri()),
            "position": lsp.Position(line=line - 1, character=column - 1),
        }

    def _place(self, uri: str, pos: lsp.Position) -> Place:
        path = Path(uri.removeprefix("file://"))
        return str(path.relative_to(self.root)), pos.line + 1, pos.character + 1

    async def references(self, rel: str, line: int, column: int) -> list[Place]:
        found = await self.client.text_document_references_async(
            lsp.ReferenceParams(
                context=lsp.ReferenceContext(include_declaration=True),
                **self._doc(rel, line, column),
            )
        )
        return sorted(self._place(loc.uri, loc.range.start) for loc in found or [])

    async def definition(self, rel: str, line: int, column: int) -> list[Place]:
        found = await self.client.text_document_definition_async(
            lsp.DefinitionParams(**self._doc(rel, line, column))
        )
        items = found if isinstance(found, list) else [found] if found else []
        out = []
        for item in items:
            if isinstance(item, lsp.LocationLink):
                out.append(self._place(item.target_uri, item.target_selection_range.start))
            else:
                out.append(self._place(item.uri, item.range.start))
        return sorted(out)

    async def hover(self, rel: str, line: int, column: int) -> str:
        found = await self.client.text_document_hover_async(
            lsp.HoverParams(**self._doc(rel, line, column))
        )
        assert found is not None
        contents = found.contents
        assert isinstance(contents, lsp.MarkupContent)
        return contents.value.strip()

    async def rename(self, rel: str, line: int, column: int, new_name: str) -> dict[str, str]:
        """The files the server's rename changes, with their new text (applied here)."""
        found = await self.client.text_document_rename_async(
            lsp.RenameParams(new_name=new_name, **self._doc(rel, line, column))
        )
        assert found is not None
        changes: dict[str, list[lsp.TextEdit]] = dict(found.changes or {})
        for change in found.document_changes or []:
            assert isinstance(change, lsp.TextDocumentEdit)
            changes.setdefault(change.text_document.uri, []).extend(
                e for e in change.edits if isinstance(e, lsp.TextEdit)
            )
        out = {}
        for uri, edits in changes.items():
            path = Path(uri.removeprefix("file://"))
            lines = path.read_text().splitlines(keepends=True)
            text = "".join(lines)

            def offset(pos: lsp.Position, lines: list[str] = lines) -> int:
                return sum(len(x) for x in lines[: pos.line]) + pos.character

            for e in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
                text = text[: offset(e.range.start)] + e.new_text + text[offset(e.range.end) :]
            out[str(path.relative_to(self.root))] = text
        return out


def places(output: str) -> list[Place]:
    """The ``path:line:column: text`` lines of a semantic tool's answer."""
    out = []
    for line in output.splitlines():
        head = line.split(": ", 1)[0]
        parts = head.rsplit(":", 2)
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            out.append((parts[0], int(parts[1]), int(parts[2])))
    return sorted(out)
