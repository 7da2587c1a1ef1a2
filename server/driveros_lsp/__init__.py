"""driveros-lsp: the agent behind the Language Server Protocol (pygls 2.x).

``create_server()`` builds a fully wired server; ``python -m driveros_lsp`` runs it. Importing
this package is cheap: the agent is imported when the first run starts.
"""

from driveros_lsp._runner import AgentRunner, Runner, RunOutcome, RunRequest
from driveros_lsp._server import DriverosLanguageServer, create_server
from driveros_lsp._settings import Settings, parse_settings, settings_json_schema

__all__ = [
    "AgentRunner",
    "DriverosLanguageServer",
    "RunOutcome",
    "RunRequest",
    "Runner",
    "Settings",
    "create_server",
    "parse_settings",
    "settings_json_schema",
]
