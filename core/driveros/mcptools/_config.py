"""Which MCP servers to start: the common ``{"mcpServers": {...}}`` file and ACP's list."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from driveros._errors import ConfigError

_NAME = re.compile(r"[^A-Za-z0-9_-]+")


class McpServerConfig(BaseModel):
    """One MCP server: a stdio server (``command``, started per run) or a streamable HTTP
    server (``url``, connected to per run)."""

    model_config = ConfigDict(frozen=True)

    name: str
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None

    @property
    def prefix(self) -> str:
        """The server's name as a tool-name prefix (letters, digits, ``_``, ``-``)."""
        return _NAME.sub("_", self.name).strip("_")[:24] or "mcp"


def parse_mcp_config(data: Any, *, origin: str = "MCP config") -> list[McpServerConfig]:
    """``{"mcpServers": {NAME: {"command": ..., "args": [...], "env": {...}}}}``."""
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(f'{origin}: expected an object {{"mcpServers": {{...}}}}')
    found: list[McpServerConfig] = []
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            raise ConfigError(f"{origin}: mcpServers.{name} must be an object")
        try:
            found.append(McpServerConfig.model_validate({**entry, "name": name}))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
            )
            raise ConfigError(f"{origin}: mcpServers.{name}: {problems}") from exc
        if found[-1].command is None and found[-1].url is None:
            raise ConfigError(f"{origin}: mcpServers.{name} needs a command (or a url)")
    return found


def load_mcp_config(path: Path) -> list[McpServerConfig]:
    """The servers of a JSON file (blocking: call it off the event loop)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the MCP config: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: the MCP config is not valid JSON: {exc}") from exc
    return parse_mcp_config(data, origin=str(path))
