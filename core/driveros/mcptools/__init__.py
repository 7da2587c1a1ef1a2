"""MCP servers' tools for the agent: configuration, and servers started per run.

    servers = load_mcp_config(Path("mcp.json"))          # {"mcpServers": {...}}
    servers = configured_mcp_servers(None)                # ~/.config/driveros/mcp.json
    async with open_mcp_tools(servers, report=warn) as tools:
        await execute_run(spec, env=env, on_event=..., context=RunContext(extra_tools=tools))

Tools are named ``SERVER__TOOL``; every call goes through the run's approval (docs/acp.md).
"""

from driveros.mcptools._config import (
    McpServerConfig,
    configured_mcp_servers,
    load_mcp_config,
    parse_mcp_config,
    user_mcp_file,
)
from driveros.mcptools._tools import open_mcp_tools, tool_name

__all__ = [
    "McpServerConfig",
    "configured_mcp_servers",
    "load_mcp_config",
    "open_mcp_tools",
    "parse_mcp_config",
    "tool_name",
    "user_mcp_file",
]
