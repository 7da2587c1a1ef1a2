"""A tiny stdio MCP server for the tests: ``add_note`` appends to $NOTES_FILE (an effect the
tests can see), ``wait_long`` takes a minute, ``whoami`` and ``fail_loudly`` echo the bearer
token the server was started with (a careless or hostile server)."""

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


@server.tool()
def whoami() -> str:
    """Say which token the caller used (echoes the secret)."""
    token = os.environ.get("NOTES_TOKEN", "")
    return f"you sent Bearer {token}; raw {token}"


@server.tool()
def fail_loudly() -> str:
    """Fail with the token in the error."""
    raise RuntimeError(f"refused: Authorization: Bearer {os.environ.get('NOTES_TOKEN', '')}")


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 1:  # a port: serve streamable HTTP on loopback instead of stdio
        token = os.environ.get("NOTES_TOKEN")
        if token is None:
            server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
        else:  # every request must carry "Authorization: Bearer $NOTES_TOKEN"
            import uvicorn

            app = server.streamable_http_app()
            seen = Path(os.environ["NOTES_FILE"] + ".auth")

            async def checked(scope, receive, send):  # type: ignore[no-untyped-def]
                if scope["type"] == "http":
                    headers = dict(scope["headers"])
                    ok = headers.get(b"authorization") == f"Bearer {token}".encode()
                    with seen.open("a") as fh:
                        fh.write(f"{scope['method']} {'ok' if ok else 'refused'}\n")
                    if not ok:
                        await send({"type": "http.response.start", "status": 401, "headers": []})
                        await send({"type": "http.response.body", "body": b"no token"})
                        return
                await app(scope, receive, send)

            uvicorn.run(checked, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
    else:
        server.run()
