"""The editor's unsaved buffers as a run reads them (``driveros.runs.ReadBuffer``).

A run starts with the buffers open then (``RunRequest.overlays``); a buffer the run has not
seen (opened since, or edited since a follow-up began) is read when the agent first touches
its file, or a rename first edits it (docs/lsp-runs.md, "Runs and unsaved buffers";
docs/semantic.md, "Unsaved buffers"). The run reads on the agent loop; pygls' documents live
on the server loop, so each read hops to it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from pygls.uris import to_fs_path

from driveros_lsp._editor import Editor


def _relative(root: Path, uri: str) -> str | None:
    """The workspace-relative POSIX path of a ``file:`` URI under ``root`` (no resolving:
    the run names files as the workspace does)."""
    fs = to_fs_path(uri)
    if fs is None or not Path(fs).is_absolute():
        return None
    try:
        return Path(fs).relative_to(root).as_posix()
    except ValueError:
        return None


class EditorBuffers:
    """One run's :data:`~driveros.runs.ReadBuffer` over the editor's open documents."""

    def __init__(self, server: Editor, loop: asyncio.AbstractEventLoop, root: Path) -> None:
        self._server = server
        self._loop = loop
        self._root = root

    async def __call__(self, rel: str) -> str | None:
        """The open buffer's text of ``rel`` (None when the editor has it not open)."""
        future = asyncio.run_coroutine_threadsafe(self._read(rel), self._loop)
        try:
            return await asyncio.wrap_future(future)
        finally:
            future.cancel()

    async def _read(self, rel: str) -> str | None:
        docs = self._server.workspace.text_documents
        doc = docs.get((self._root / rel).as_uri())
        if doc is None:  # the client spells the URI its own way
            doc = next((d for u, d in list(docs.items()) if _relative(self._root, u) == rel), None)
        return None if doc is None else doc.source
