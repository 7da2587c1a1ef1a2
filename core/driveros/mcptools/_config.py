"""Which MCP servers to start: the common ``{"mcpServers": {...}}`` file and ACP's list."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from driveros._errors import ConfigError
from driveros._paths import user_config_dir

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
    #: HTTP headers sent with every request to a ``url`` server (often a token: never shown in
    #: a repr, a log line or an error).
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    #: Tools of this server that ``policy`` runs without asking (``"*"``: every tool). Read
    #: only from the user's own config (``mcp.json``, ``--mcp-config``), never a workspace.
    allow: list[str] = Field(default_factory=list)
    #: Where this server was configured, for "add it to the allow list in …" (set by the
    #: file's parser; an ACP client's server says so).
    origin: str = Field(default="", exclude=True)

    def allows(self, tool: str) -> bool:
        """The user's config lets ``tool`` of this server run unasked."""
        return "*" in self.allow or tool in self.allow

    def redact(self, text: str) -> str:
        """``text`` with every header value of this server masked, and the credential of a
        ``<scheme> <credential>`` value (``Bearer …``, ``Basic …``) on its own too."""
        secrets = set()
        for value in self.headers.values():
            secrets.add(value)
            scheme, _, credential = value.strip().partition(" ")
            if scheme and len(credential.strip()) >= _MIN_CREDENTIAL:
                secrets.add(credential.strip())
        for secret in sorted(secrets, key=len, reverse=True):
            if secret:
                text = text.replace(secret, "***")
        return text

    @property
    def prefix(self) -> str:
        """The server's name as a tool-name prefix (letters, digits, ``_``, ``-``)."""
        return _NAME.sub("_", self.name).strip("_")[:24] or "mcp"


#: A credential after a scheme shorter than this is not masked on its own (``Bearer x``).
_MIN_CREDENTIAL = 6
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def header_problem(headers: dict[str, str]) -> str | None:
    """Why ``headers`` cannot be sent (naming the header, never its value), or None."""
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name):
            return f"header name {name[:40]!r} is not a valid HTTP header name"
        if any(not (" " <= ch <= "~" or ch == "\t") for ch in value):
            return f"the value of header {name!r} is not printable ASCII (a line break?)"
    return None


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
            found.append(McpServerConfig.model_validate({**entry, "name": name, "origin": origin}))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
            )
            raise ConfigError(f"{origin}: mcpServers.{name}: {problems}") from exc
        if found[-1].command is None and found[-1].url is None:
            raise ConfigError(f"{origin}: mcpServers.{name} needs a command (or a url)")
        problem = header_problem(found[-1].headers)
        if problem is not None:
            raise ConfigError(f"{origin}: mcpServers.{name}: {problem}")
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


#: The user's own MCP servers, in the user config directory (``~/.config/driveros/mcp.json``).
USER_MCP_FILE = "mcp.json"


def user_mcp_file(environ: Mapping[str, str] | None = None) -> Path:
    """Where the user keeps the MCP servers every run may use (``$XDG_CONFIG_HOME/driveros``
    or ``~/.config/driveros``, then ``mcp.json``)."""
    return user_config_dir(environ) / USER_MCP_FILE


def configured_mcp_servers(path: Path | None) -> list[McpServerConfig]:
    """The servers of ``--mcp-config`` ``path`` when given, else of the user's own file
    (:func:`user_mcp_file`) when it exists, else none (blocking: call it off the loop).
    Never a workspace's file: MCP servers are code, and only the user chooses them."""
    if path is not None:
        return load_mcp_config(path.expanduser())
    own = user_mcp_file()
    return load_mcp_config(own) if own.is_file() else []
