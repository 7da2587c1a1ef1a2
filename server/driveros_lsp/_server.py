"""The server object: pygls' ``LanguageServer`` plus the run manager, the run hub, workspace
trust, settings and client traits. :func:`driveros_lsp._app.create_server` wires the feature
modules onto it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from driveros import __version__
from driveros_lsp._editor import ClientTraits
from driveros_lsp._trust import WorkspaceTrust
from driveros_lsp._wire import DriverosProtocol
from driveros_lsp.protocol import SERVER_NAME

if TYPE_CHECKING:
    from driveros_lsp._hub import RunHub
    from driveros_lsp._runner import Runner
    from driveros_lsp._runs import RunManager, Runs
    from driveros_lsp._settings import Settings

    RunnerFactory = Callable[[], Runner]

logger = logging.getLogger(__name__)


def _default_runner_factory() -> Runner:
    from driveros_lsp._runner import AgentRunner

    return AgentRunner()


class DriverosLanguageServer(LanguageServer):
    """pygls ``LanguageServer`` plus the run manager, settings and client traits."""

    def __init__(self, *, runner_factory: RunnerFactory | None = None) -> None:
        # Full sync: pygls applies incremental changes on str.splitlines lines (a form feed or
        # U+2028 in a buffer shifts every later change; docs/lsp-runs.md, "Position encoding").
        super().__init__(
            SERVER_NAME,
            __version__,
            protocol_cls=DriverosProtocol,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Full,
        )
        self._settings: Settings | None = None
        #: Parses the initializationOptions after ``initialize`` has been answered.
        self.settings_task: asyncio.Task[None] | None = None
        self.traits = ClientTraits()
        self._first_document_dir: Path | None = None
        self._root_told: Path | None = None
        #: The "approval ask needs message actions" warning was shown (once per session).
        self.ask_warned = False
        self.trust = WorkspaceTrust(self)
        self._runner_factory = runner_factory or _default_runner_factory
        self._manager: RunManager | None = None
        self._hub: RunHub | None = None

    @property
    def runs(self) -> Runs:
        """The run manager (the one owner of every run and of its review state) as the feature
        modules see it."""
        return self._run_owners()[0]

    @property
    def hub(self) -> RunHub:
        """What the editor sees of runs; it observes the manager."""
        return self._run_owners()[1]

    def _run_owners(self) -> tuple[RunManager, RunHub]:
        # made on first use, not before ``initialize`` is answered: they import the run stack
        if self._manager is None or self._hub is None:
            from driveros_lsp._hub import RunHub
            from driveros_lsp._runs import RunManager

            manager = RunManager(self._runner_factory, prepare=self.trust.prepare)
            hub = RunHub(self, manager)
            manager.observe(hub)
            self._manager, self._hub = manager, hub
        return self._manager, self._hub

    @property
    def settings(self) -> Settings:
        """The settings in force (all defaults until the client sent some)."""
        if self._settings is None:
            from driveros_lsp._settings import Settings

            self._settings = Settings()
        return self._settings

    @settings.setter
    def settings(self, value: Settings) -> None:
        self._settings = value

    async def current_settings(self) -> Settings:
        """The settings, once the initializationOptions have been read."""
        task = self.settings_task
        if task is not None and not task.done():
            await asyncio.shield(task)
        return self.settings

    def workspace_root(self) -> Path:
        """The root folder of the workspace.

        ``rootUri`` (or ``rootPath``), else the first workspace folder, else (a client that
        opened a single file, like ``nvim /tmp/x.py``) the directory of the first document it
        opened. The first answer is logged once (``window/logMessage``, Info).
        """
        root, origin = self._find_root()
        if self._root_told != root:
            self._root_told = root
            self.log(f"driveros: workspace root {root} (from {origin})", lsp.MessageType.Info)
        return root

    def folder_of(self, uri: str | None) -> Path:
        """The workspace folder holding ``uri`` (the deepest, when folders nest); the
        workspace root (:meth:`workspace_root`) when none does or ``uri`` is None."""
        from pygls.uris import to_fs_path

        path = to_fs_path(uri) if uri else None
        if path:
            target = Path(path)
            folders = [Path(p) for f in self.workspace.folders.values() if (p := to_fs_path(f.uri))]
            holding = [f for f in folders if target.is_relative_to(f)]
            if holding:
                return max(holding, key=lambda f: len(f.parts))
        return self.workspace_root()

    def _find_root(self) -> tuple[Path, str]:
        from pygls.uris import to_fs_path

        ws = self.workspace
        if ws.root_path:
            return Path(ws.root_path), "rootUri"
        for folder in ws.folders.values():
            path = to_fs_path(folder.uri)
            if path:
                return Path(path), "the first workspace folder"
        if self._first_document_dir is not None:
            return self._first_document_dir, "the directory of the first opened document"
        raise LookupError(
            "the client opened no workspace folder and no file: open a file or a folder first"
        )

    def document_opened(self, uri: str) -> None:
        """Remember the directory of the first ``file:`` document (the root of last resort)."""
        if self._first_document_dir is not None:
            return
        from pygls.uris import to_fs_path

        if not uri.startswith("file:"):
            return
        path = to_fs_path(uri)
        if path:
            self._first_document_dir = Path(path).parent

    def show(self, message: str, kind: lsp.MessageType = lsp.MessageType.Info) -> None:
        self.window_show_message(lsp.ShowMessageParams(type=kind, message=message))

    def log(self, message: str, kind: lsp.MessageType = lsp.MessageType.Log) -> None:
        self.window_log_message(lsp.LogMessageParams(type=kind, message=message))

    def notify(self, method: str, params: Any) -> None:
        self.protocol.notify(method, params)
