"""The notes MCP server (notes_server.py) over streamable HTTP, for tests of several areas."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

NOTES_SERVER = Path(__file__).resolve().parent / "notes_server.py"


@contextlib.asynccontextmanager
async def http_notes(notes: Path, token: str | None = None) -> AsyncIterator[str]:
    """The notes server over streamable HTTP on a loopback port (requiring ``token`` as a
    bearer token when given); yields its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "NOTES_FILE": str(notes)}
    if token is not None:
        env["NOTES_TOKEN"] = token
    http = await asyncio.create_subprocess_exec(
        sys.executable,
        str(NOTES_SERVER),
        str(port),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):  # until it listens (bounded)
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            break
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        http.terminate()
        await http.wait()
