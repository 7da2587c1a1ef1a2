"""A tiny stdio MCP server for the tests: ``add_note`` appends to $NOTES_FILE (an effect the
tests can see), ``wait_long`` takes a minute."""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")


@server.tool()
def add_note(text: str) -> str:
    """Append a note to the notes file."""
    with Path(os.environ["NOTES_FILE"]).open("a") as fh:
        fh.write(text + "\n")
    return f"noted: {text}"


@server.tool()
async def wait_long() -> str:
    """Take a minute (for cancellation tests); records its pid first."""
    import anyio

    Path(os.environ["NOTES_FILE"] + ".pid").write_text(str(os.getpid()))
    await anyio.sleep(60)
    return "waited"


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 1:  # a port: serve streamable HTTP on loopback instead of stdio
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        server.run()
