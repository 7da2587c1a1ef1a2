"""The editor as the server's parts see it: the client's traits and the :class:`Editor` seam.

:class:`~driveros_lsp._server.DriverosLanguageServer` implements :class:`Editor`; the modules
below it (the run hub, workspace trust, approval questions) are given an ``Editor`` and never
import the server module, so the server's modules import each other in one direction only
(tests/server/test_imports.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from lsprotocol import types as lsp
from pygls.progress import Progress
from pygls.protocol import LanguageServerProtocol
from pygls.workspace import Workspace

from driveros_lsp._text import Encoding, Lines, SomeLines, read_lines, split_lines
from driveros_lsp.protocol import EXPERIMENTAL_TRACE


@dataclass(frozen=True)
class ClientTraits:
    """What the client said it can do, reduced to the decisions the server makes."""

    encoding: Encoding = "utf-16"
    annotations: bool = False
    progress: bool = False
    trace: bool = False
    show_message: bool = True
    #: window.showMessage.messageActionItem: the client can answer a question (approval ask).
    message_actions: bool = False
    #: Who answers questions in approval events (the client's name).
    name: str = "editor"

    @classmethod
    def from_capabilities(
        cls, caps: lsp.ClientCapabilities, encoding: str, name: str | None = None
    ) -> ClientTraits:
        edit = caps.workspace.workspace_edit if caps.workspace else None
        window = caps.window
        experimental = caps.experimental if isinstance(caps.experimental, dict) else {}
        enc: Encoding = "utf-16"
        if encoding in ("utf-8", "utf-32"):
            enc = "utf-8" if encoding == "utf-8" else "utf-32"
        return cls(
            encoding=enc,
            annotations=bool(edit and edit.change_annotation_support is not None),
            progress=bool(window and window.work_done_progress),
            trace=bool(experimental.get(EXPERIMENTAL_TRACE)),
            message_actions=bool(
                window and window.show_message and window.show_message.message_action_item
            ),
            name="".join(c for c in " ".join((name or "").split()) if c.isprintable())[:60]
            or "editor",
        )


class Editor(Protocol):
    """What the run hub, the diagnostics board, workspace trust and approval questions use of
    the server."""

    traits: ClientTraits

    @property
    def workspace(self) -> Workspace: ...

    @property
    def protocol(self) -> LanguageServerProtocol: ...

    @property
    def client_capabilities(self) -> lsp.ClientCapabilities: ...

    @property
    def work_done_progress(self) -> Progress: ...

    def workspace_root(self) -> Path:
        """The workspace root; LookupError while the client has named none."""
        ...

    def show(self, message: str, kind: lsp.MessageType = lsp.MessageType.Info) -> None: ...

    def log(self, message: str, kind: lsp.MessageType = lsp.MessageType.Log) -> None: ...

    def notify(self, method: str, params: Any) -> None: ...

    def workspace_apply_edit(
        self, params: lsp.ApplyWorkspaceEditParams
    ) -> Future[lsp.ApplyWorkspaceEditResult]: ...

    def text_document_publish_diagnostics(self, params: lsp.PublishDiagnosticsParams) -> None: ...

    async def window_show_message_request_async(
        self, params: lsp.ShowMessageRequestParams
    ) -> lsp.MessageActionItem | None: ...


async def document_lines(
    editor: Editor, uri: str, path: Path, wanted: Collection[int]
) -> Lines | SomeLines:
    """The document as the editor has it, for positions on its lines ``wanted`` (0-based):
    the open buffer's lines (:func:`~driveros_lsp._text.split_lines`), else those lines of
    the file on disk, streamed off the event loop up to the last one wanted (never the whole
    file: :func:`~driveros_lsp._text.read_lines`)."""
    doc = editor.workspace.text_documents.get(uri)
    if doc is not None:
        return split_lines(doc.source)
    return await asyncio.to_thread(read_lines, path, wanted)
