"""Settings edge cases met by real clients (issue 16): an empty Lua table arrives as ``[]``."""

from __future__ import annotations

from pathlib import Path

from driveros_lsp import Settings, parse_settings, protocol
from tests.server._lsp import editor_session


def test_an_empty_list_is_no_settings() -> None:
    assert parse_settings([]) == (Settings(), [])
    assert parse_settings({"driveros": {}}) == (Settings(), [])
    assert parse_settings({}) == (Settings(), [])
    # a non-empty list is still a problem, named once
    assert parse_settings([1]) == (Settings(), ["settings must be an object, got list"])


async def test_empty_list_initialization_options_warn_nobody(workspace: Path) -> None:
    async with editor_session(workspace, profile="neovim", settings=[]) as ed:  # type: ignore[arg-type]
        # a start answers only once the settings are parsed (and any warning sent before it)
        await ed.command(protocol.CMD_AGENT_START, {"task": "anything"})
        server_messages = [m.message for m in ed.client.messages]
    assert not [m for m in server_messages if "invalid settings" in m], server_messages
