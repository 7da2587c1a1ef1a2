"""workspace/didChangeConfiguration: new settings apply to the runs started afterwards."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from driveros_lsp.features.lifecycle import ask_problems, report_settings_problems
from driveros_lsp.protocol import SETTINGS_SECTION

if TYPE_CHECKING:
    from driveros_lsp._server import DriverosLanguageServer

logger = logging.getLogger(__name__)


def setup(server: DriverosLanguageServer) -> None:
    tasks: set[asyncio.Task[None]] = set()

    def apply(raw: Any) -> None:
        from driveros_lsp._settings import Settings, parse_settings

        settings, problems = parse_settings(raw, base=Settings())
        server.settings = settings
        problems += ask_problems(server, raw)
        if problems:
            report_settings_problems(server, problems)

    async def pull() -> None:
        try:
            values = await server.workspace_configuration_async(
                lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section=SETTINGS_SECTION)])
            )
        except Exception as exc:  # a client that cannot answer keeps the current settings
            logger.warning("workspace/configuration failed: %s", exc)
            return
        section = values[0] if values else None
        if section is None:
            # The client has no such section (eglot answers null for one it does not know):
            # nothing was said, so the settings it sent at initialize stand.
            return
        apply(section)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(params: lsp.DidChangeConfigurationParams) -> None:
        raw = params.settings
        if isinstance(raw, dict) and raw:
            apply(raw)
            return
        caps = server.client_capabilities.workspace
        if caps is not None and caps.configuration:
            task = asyncio.ensure_future(pull())
            tasks.add(task)
            task.add_done_callback(tasks.discard)
