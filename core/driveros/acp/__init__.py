"""``driveros acp``: the agent behind the Agent Client Protocol (v1) over stdio.

    await serve(Settings(provider="anthropic"))   # until the client closes stdin

Each ``session/prompt`` is one driveros run on a scratch copy (driveros.runs.execute_run);
its trace streams as ``session/update``; every proposed edit is shown as a diff and written
only after ``session/request_permission`` allows it. See docs/acp.md.
"""

from driveros.acp._modes import MODE_IDS, MODES, ModeId
from driveros.acp._server import DriverosAgent
from driveros.acp._settings import Settings
from driveros.acp._stdio import OneLineErrors, serve

__all__ = [
    "MODES",
    "MODE_IDS",
    "DriverosAgent",
    "ModeId",
    "OneLineErrors",
    "Settings",
    "serve",
]
