"""Test helpers shared by every area: a scripted model speaking the real wire formats.

    async with ScriptedModelServer([Turn(tool_calls=[ToolCallSpec("run", {"command": "ls"})]),
                                    Turn(text="done")]) as server:
        provider = openaicompat.openai("m", base_url=server.openai_base_url, api_key="k")

Run as a process: ``python -m driveros.testing.scripted --script FILE.json [--port 0]``.
"""

from driveros.testing._script import (
    EXHAUSTED_TEXT,
    ScriptedError,
    ToolCallSpec,
    Turn,
    TurnUsage,
    load_script,
    parse_turns,
)
from driveros.testing._server import ReceivedRequest, ScriptedModelServer

__all__ = [
    "EXHAUSTED_TEXT",
    "ReceivedRequest",
    "ScriptedError",
    "ScriptedModelServer",
    "ToolCallSpec",
    "Turn",
    "TurnUsage",
    "load_script",
    "parse_turns",
]
