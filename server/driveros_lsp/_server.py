"""The server object and its factory: ``create_server()`` wires every feature module."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from driveros_lsp._runs import RunManager
from driveros_lsp._text import Encoding
from driveros_lsp.protocol import EXPERIMENTAL_TRACE, SERVER_NAME

if TYPE_CHECKING:
    from driveros_lsp._runner import Runner
    from driveros_lsp._settings import Settings

    RunnerFactory = Callable[[], Runner]

logger = logging.getLogger(__name__)


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


def _default_runner_factory() -> Runner:
    from driveros_lsp._runner import AgentRunner

    return AgentRunner()


class DriverosLanguageServer(LanguageServer):
    """pygls ``LanguageServer`` plus the run manager, settings and client traits."""

    def __init__(self, *, runner_factory: RunnerFactory | None = None) -> None:
        from driveros import __version__
        from driveros_lsp._wire import DriverosProtocol

        super().__init__(SERVER_NAME, __version__, protocol_cls=DriverosProtocol)
        self._settings: Settings | None = None
        #: Parses the initializationOptions after ``initialize`` has been answered.
        self.settings_task: asyncio.Task[None] | None = None
        self.traits = ClientTraits()
        self._first_document_dir: Path | None = None
        self._root_told: Path | None = None
        #: The "approval ask needs message actions" warning was shown (once per session).
        self.ask_warned = False
        from driveros_lsp._hub import RunHub

        self.hub = RunHub(self)
        from driveros_lsp._trust import WorkspaceTrust

        self.trust = WorkspaceTrust(self)
        self.runs = RunManager(
            runner_factory or _default_runner_factory, self.hub, prepare=self.trust.prepare
        )

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


def create_server(*, runner_factory: RunnerFactory | None = None) -> DriverosLanguageServer:
    """A new, fully wired server. ``runner_factory`` replaces the agent (tests, benchmarks)."""
    from driveros_lsp.features import (
        code_actions,
        commands,
        configuration,
        documents,
        lifecycle,
        memory,
    )

    server = DriverosLanguageServer(runner_factory=runner_factory)
    for setup in (
        lifecycle.setup,
        configuration.setup,
        documents.setup,
        code_actions.setup,
        commands.setup,
        memory.setup,
    ):
        setup(server)
    return server
