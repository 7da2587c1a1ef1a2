"""What ``driveros acp`` runs with: its settings (the run options plus ACP's own) and the MCP
servers a client names in ``session/new``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import schema
from pydantic import ConfigDict, Field

from driveros.acp._modes import ModeId
from driveros.config import Environment
from driveros.mcptools import McpServerConfig
from driveros.runs import HeadlessOptions


class Settings(HeadlessOptions):
    """What ``driveros acp`` was started with (its flags); each session runs with these: the
    run options of the front ends without an editor (``driveros.runs.HeadlessOptions``, their
    defaults and bounds: the approval wait and ``otel`` included) plus ACP's own."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    mode: ModeId = Field(
        default="ask",
        description="The session mode new sessions start in (session/set_mode switches it).",
    )
    #: MCP servers every session gets (``--mcp-config``), before the client's own.
    mcp_servers: tuple[McpServerConfig, ...] = ()
    #: Loads the configuration of a workspace (tests inject one).
    environment: Callable[[Path], Environment] | None = Field(default=None, exclude=True)


def mcp_configs(servers: list[Any]) -> list[McpServerConfig]:
    """ACP's ``mcpServers`` (stdio: command/args/env list; http/sse: url and headers) as
    configs."""
    found: list[McpServerConfig] = []
    for server in servers:
        if isinstance(server, schema.McpServerStdio):
            found.append(
                McpServerConfig(
                    name=server.name,
                    command=server.command,
                    args=list(server.args),
                    env={e.name: e.value for e in server.env},
                )
            )
        else:
            name = getattr(server, "name", "mcp")
            headers = {h.name: h.value for h in getattr(server, "headers", None) or []}
            found.append(
                McpServerConfig(
                    name=str(name), url=str(getattr(server, "url", "")), headers=headers
                )
            )
    return found
