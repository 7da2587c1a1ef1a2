"""Document sync: pygls tracks open buffers (text, version); this module reads them.

A run starts from what the user sees: every open buffer under the workspace is overlaid on
the run's scratch copy (``RunRequest.overlays``). Whether a document changed meanwhile is
decided on its text when the proposal is reviewed (the review planner compares it with the
change's ``before`` side), not on its version.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.uris import to_fs_path

if TYPE_CHECKING:
    from driveros_lsp._server import DriverosLanguageServer

logger = logging.getLogger(__name__)


def relative_path(root: Path, uri: str) -> str | None:
    """The workspace-relative POSIX path of ``uri`` (None when outside the workspace, or not
    an absolute ``file:`` URI: ``file:calc.py`` would resolve against the server's cwd)."""
    fs = to_fs_path(uri)
    if fs is None or not Path(fs).is_absolute():
        return None
    try:
        return Path(fs).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def snapshot(server: DriverosLanguageServer, root: Path) -> dict[str, str]:
    """The open buffers under ``root`` (relative path -> text)."""
    overlays: dict[str, str] = {}
    for uri, doc in server.workspace.text_documents.items():
        rel = relative_path(root, uri)
        if rel is None:
            continue
        overlays[rel] = doc.source
    return overlays


def setup(server: DriverosLanguageServer) -> None:
    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: lsp.DidOpenTextDocumentParams) -> None:
        logger.debug("open %s v%s", params.text_document.uri, params.text_document.version)
        server.document_opened(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: lsp.DidChangeTextDocumentParams) -> None:
        logger.debug("change %s v%s", params.text_document.uri, params.text_document.version)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: lsp.DidCloseTextDocumentParams) -> None:
        logger.debug("close %s", params.text_document.uri)
