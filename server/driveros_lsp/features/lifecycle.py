"""initialize (settings, client traits), shutdown and exit (every run canceled)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from driveros_lsp._settings import parse_settings

if TYPE_CHECKING:
    from driveros_lsp._server import DriverosLanguageServer

logger = logging.getLogger(__name__)


def setup(server: DriverosLanguageServer) -> None:
    from driveros_lsp._server import ClientTraits

    @server.feature(lsp.INITIALIZE)
    def initialize(params: lsp.InitializeParams) -> None:
        encoding = server.workspace.position_encoding
        value = getattr(encoding, "value", encoding) or "utf-16"
        server.traits = ClientTraits.from_capabilities(params.capabilities, str(value))
        settings, problems = parse_settings(params.initialization_options)
        server.settings = settings
        if problems:
            report_settings_problems(server, problems)

    @server.feature(lsp.SHUTDOWN)
    async def shutdown(params: None) -> None:
        await stop_everything(server)

    @server.feature(lsp.EXIT)
    async def exit_(params: None) -> None:
        await stop_everything(server)


def report_settings_problems(server: DriverosLanguageServer, problems: list[str]) -> None:
    """Tell the user which settings were ignored (they fell back to their defaults)."""
    text = "driveros: invalid settings replaced by defaults: " + "; ".join(problems)
    logger.warning("%s", text)
    server.show(text, lsp.MessageType.Warning)


async def stop_everything(server: DriverosLanguageServer) -> None:
    """Cancel every run (model stream, tools, sandbox) and free every scratch copy."""
    await server.runs.aclose()
    await server.hub.aclose()
