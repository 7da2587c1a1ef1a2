"""Starting MCP servers for one run and offering their tools to the agent.

    async with open_mcp_tools(configs, report=print) as tools:
        await execute_run(spec, env=env, on_event=..., context=RunContext(extra_tools=tools))

Each stdio server is started (an HTTP server, ``url``, is connected to with the streamable
HTTP transport) with the official ``mcp`` SDK, initialized, and its tools are listed; each
tool is offered as ``SERVER__TOOL``. A server that fails to start is reported once through
``report`` and left out; the run goes on. Every server is stopped (disconnected) when the
block ends (the run's end, its cancellation included).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from driveros.agent import ExtraTool
from driveros.approval import ExternalTool
from driveros.llm import ToolSpec
from driveros.mcptools._config import McpServerConfig, header_problem

log = logging.getLogger(__name__)

#: Seconds a server may take to start and list its tools.
START_TIMEOUT = 30.0
#: Seconds one tool call may take.
CALL_TIMEOUT = 300.0
_TOOL = re.compile(r"[^A-Za-z0-9_-]+")


def tool_name(server: McpServerConfig, tool: str) -> str:
    """``SERVER__TOOL`` within the 64 characters providers accept."""
    return f"{server.prefix}__{_TOOL.sub('_', tool)}"[:64]


def external_tool(server: McpServerConfig, tool: str) -> ExternalTool:
    """What the approval needs to know of ``tool``: allowed by the user's config or not,
    where it runs (the server's own process, as the user: never in the sandbox) and where the
    user would allow it."""
    if server.command is not None:
        runs_in = f"the MCP server {server.name!r}: its own process ({server.command}), as you"
    else:
        runs_in = f"the MCP server {server.name!r} at {server.url}"
    origin = server.origin or "your MCP config (~/.config/driveros/mcp.json)"
    return ExternalTool(
        server=server.name,
        tool=tool,
        allowed=server.allows(tool),
        runs_in=runs_in,
        config=f"mcpServers.{server.name} in {origin}",
    )


def _describe(exc: BaseException) -> str:
    """One line for a failure; an exception group (the SDK's task groups) by its first leaf."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _text_of(content: Sequence[Any]) -> str:
    parts = []
    for block in content:
        text = getattr(block, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(block, 'type', 'content')}]")
    return "\n".join(parts)


async def _start(
    server: McpServerConfig, stack: contextlib.AsyncExitStack, cwd: str | None
) -> list[ExtraTool]:
    import asyncio

    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client

    async with asyncio.timeout(START_TIMEOUT):
        if server.command is not None:
            params = StdioServerParameters(
                command=server.command,
                args=list(server.args),
                env=dict(server.env),
                cwd=server.cwd or cwd,
            )
            read, write = await stack.enter_async_context(stdio_client(params))
        elif server.url and server.url.startswith(("http://", "https://")):
            client = None
            if server.headers:
                problem = header_problem(server.headers)
                if problem is not None:
                    raise ValueError(problem)
                import httpx2

                # The SDK's own timeouts (30 s, 300 s to read a stream), plus the headers.
                client = await stack.enter_async_context(
                    httpx2.AsyncClient(
                        headers=server.headers,
                        timeout=httpx2.Timeout(START_TIMEOUT, read=CALL_TIMEOUT),
                    )
                )
            read, write = await stack.enter_async_context(
                streamable_http_client(server.url, http_client=client)
            )
        else:
            raise ValueError(f"not a stdio command nor an http(s) URL: {server.url!r}")
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        listed = await session.list_tools()

    tools: list[ExtraTool] = []
    for tool in listed.tools:
        name = tool_name(server, tool.name)
        schema = dict(tool.input_schema or {"type": "object", "properties": {}})
        schema.pop("title", None)
        description = f"[MCP server {server.name}] {tool.description or tool.name}"

        async def call(arguments: dict[str, Any], _remote: str = tool.name) -> tuple[bool, str]:
            # What a foreign server says (a result, or why a call failed) may echo the token
            # it was sent: masked before the model, the trace or memory can see it.
            try:
                result = await session.call_tool(
                    _remote, arguments, read_timeout_seconds=CALL_TIMEOUT
                )
            except Exception as exc:  # the SDK's and the transport's errors: one line
                return False, f"error: {server.redact(_describe(exc))}"
            return not result.is_error, server.redact(_text_of(result.content))

        tools.append(
            ExtraTool(
                spec=ToolSpec(name=name, description=description, parameters=schema),
                call=call,
                external=external_tool(server, tool.name),
            )
        )
    return tools


@contextlib.asynccontextmanager
async def open_mcp_tools(
    servers: Sequence[McpServerConfig],
    *,
    report: Callable[[str], Any],
    cwd: str | None = None,
) -> AsyncIterator[list[ExtraTool]]:
    """Start ``servers`` (each in ``cwd`` unless it names its own) for the block's duration;
    yields the tools of those that started. ``report`` gets one line per server that did
    not start."""
    tools: list[ExtraTool] = []
    async with contextlib.AsyncExitStack() as outer:
        for server in servers:
            stack = contextlib.AsyncExitStack()
            try:
                found = await _start(server, stack, cwd)
            except Exception as exc:  # a foreign process: any failure only drops that server
                with contextlib.suppress(Exception):
                    await stack.aclose()
                # One line, header values masked (they are often tokens): no traceback, which
                # could show them in an exception's text.
                detail = server.redact(_describe(exc))
                log.info("MCP server %s did not start: %s", server.name, detail)
                report(f"MCP server {server.name!r} did not start: {detail}")
                continue
            outer.push_async_callback(_close_quietly, stack, server)
            tools.extend(found)
        yield tools


async def _close_quietly(stack: contextlib.AsyncExitStack, server: McpServerConfig) -> None:
    try:
        await stack.aclose()
    except Exception as exc:  # stopping a foreign process must not end the run in an error
        # One line, header values masked, as for a server that did not start.
        detail = server.redact(_describe(exc))
        log.info("stopping MCP server %s failed: %s", server.name, detail)
