"""Serving ACP on stdin/stdout, with stdout reserved for the protocol."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any, cast

from acp import run_agent

from driveros.acp._server import DriverosAgent, Settings

#: The largest message accepted from the client (prompts may embed whole files).
LINE_LIMIT = 50 * 1024 * 1024


def _reserve_stdout() -> int:
    """A private descriptor for the protocol; file descriptor 1 (and ``sys.stdout``) now
    point at stderr, so nothing else (a library's print, a child process) can write into
    the protocol stream."""
    sys.stdout.flush()
    protocol = os.dup(1)
    os.dup2(2, 1)
    os.set_inheritable(protocol, False)
    return protocol


async def serve(settings: Settings | None = None) -> None:
    """Serve one client on stdin/stdout until it closes stdin."""
    protocol = _reserve_stdout()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = os.fdopen(protocol, "wb", buffering=0)
    transport, proto = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
    writer = asyncio.StreamWriter(transport, proto, None, loop)
    try:
        # The SDK routes only the methods the agent has (no list/fork/resume here); its Agent
        # protocol lists every optional one, hence the cast.
        await run_agent(cast(Any, DriverosAgent(settings)), writer, reader)
    finally:
        transport.close()
