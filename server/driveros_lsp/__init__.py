"""driveros-lsp: the agent behind the Language Server Protocol (pygls 2.x).

``create_server()`` builds a fully wired server; ``python -m driveros_lsp`` runs it. Importing
this package is cheap: names load on first use, the agent when the first run starts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from driveros_lsp._app import create_server
    from driveros_lsp._runner import AgentRunner, Runner, RunOutcome, RunRequest, RunResult
    from driveros_lsp._server import DriverosLanguageServer
    from driveros_lsp._settings import Settings, parse_settings, settings_json_schema

_EXPORTS = {
    "AgentRunner": "driveros_lsp._runner",
    "DriverosLanguageServer": "driveros_lsp._server",
    "RunOutcome": "driveros_lsp._runner",
    "RunRequest": "driveros_lsp._runner",
    "RunResult": "driveros_lsp._runner",
    "Runner": "driveros_lsp._runner",
    "Settings": "driveros_lsp._settings",
    "create_server": "driveros_lsp._app",
    "parse_settings": "driveros_lsp._settings",
    "settings_json_schema": "driveros_lsp._settings",
}

__all__ = [
    "AgentRunner",
    "DriverosLanguageServer",
    "RunOutcome",
    "RunRequest",
    "RunResult",
    "Runner",
    "Settings",
    "create_server",
    "parse_settings",
    "settings_json_schema",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'driveros_lsp' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
