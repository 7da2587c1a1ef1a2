"""The workspace's own build diagnostics, published when ``publishDiagnostics`` is on.

Useful where no other server reports them (docs/lsp-runs.md, "Workspace diagnostics"): after
a save (debounced: :data:`DEBOUNCE_S` after the last one; a save during a computation makes
one more afterwards), the build-diagnostics feed runs once on the workspace itself as
``driveros agent --fix`` finds its targets (:func:`driveros.runs.current_errors`): in the
local tier's sandbox (bubblewrap, network off) that discards every write its commands make to
the user's tree, with the built-in checks, and a trusted
workspace's own checks under the ``policy`` approval. Its errors (failing tests at their
assert line, type errors, …) are published as one standing set (``source: "driveros"``,
``data.runId: "workspace"``) in the same union as the runs' diagnostics, replacing the
previous set. With the setting off a save clears what was published. A computation that
fails is logged and shown once per session; the next save tries again.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

if TYPE_CHECKING:
    from driveros_lsp._server import DriverosLanguageServer

logger = logging.getLogger(__name__)

#: Seconds after the last save before the feed runs.
DEBOUNCE_S = 1.0
#: The board key (and ``data.runId``) of the workspace's standing diagnostics.
WORKSPACE_KEY = "workspace"


class WorkspaceDiagnostics:
    """Debounced feed runs on save, their errors on the server's diagnostics board."""

    def __init__(self, server: DriverosLanguageServer) -> None:
        self._server = server
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None
        self._again = False
        self._warned = False
        self._published = False
        #: Completed computations (tests and the bench wait on it).
        self.computed = 0

    def saved(self) -> None:
        """A document was saved: compute :data:`DEBOUNCE_S` after the last save."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(DEBOUNCE_S, self._fire)

    def _fire(self) -> None:
        self._timer = None
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.ensure_future(self._compute())

    async def _compute(self) -> None:
        again = True
        while again:
            self._again = False
            try:
                await self._once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # reported once; the next save tries again
                logger.warning("workspace diagnostics failed: %s", exc)
                if not self._warned:
                    self._warned = True
                    self._server.show(
                        f"driveros: the workspace diagnostics (publishDiagnostics) failed: {exc}",
                        lsp.MessageType.Warning,
                    )
            self.computed += 1
            again = self._again

    async def _once(self) -> None:
        settings = await self._server.current_settings()
        try:
            root = self._server.workspace_root()
        except LookupError:
            return
        board = self._server.hub.board
        if not settings.publish_diagnostics:
            if self._published:
                board.replace(WORKSPACE_KEY, [], root)
                self._published = False
            return
        await asyncio.to_thread(importlib.import_module, "driveros.runs._execute")
        from driveros.config import load_environment
        from driveros.runs import current_errors

        trusted = await asyncio.to_thread(_is_trusted, root)
        env = await asyncio.to_thread(load_environment, cwd=root, trusted=trusted)
        spec = settings.spec(
            task="the workspace's diagnostics",
            workspace=root,
            approve="policy",
            sandbox="local",
            network=False,
            workspace_trusted=env.workspace_trusted,
        )
        errors, _checks, _elsewhere = await current_errors(spec, env)
        board.replace(WORKSPACE_KEY, errors, root)
        self._published = True

    async def idle(self) -> None:
        """Wait until no computation is due or running."""
        while self._timer is not None or (self._task is not None and not self._task.done()):
            if self._task is not None and not self._task.done():
                await asyncio.wait([self._task])
            else:
                await asyncio.sleep(0.05)

    async def aclose(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _is_trusted(root: Path) -> bool:
    """In the user's trust store (never asks: a save is no moment for a question). Blocking."""
    from driveros.trust import TrustStore

    try:
        return TrustStore.default().is_trusted(root)
    except Exception:  # an unreadable store: untrusted is the safe answer
        return False


def setup(server: DriverosLanguageServer) -> None:
    diagnostics = WorkspaceDiagnostics(server)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE, lsp.SaveOptions(include_text=False))
    def did_save(params: lsp.DidSaveTextDocumentParams) -> None:
        diagnostics.saved()
