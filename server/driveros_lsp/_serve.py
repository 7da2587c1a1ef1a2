"""Run a server over the protocol pipes or one TCP connection until the client goes away.

However the session ends (``exit``, stdin EOF, a dropped socket), every run is canceled and
every scratch copy released before the process leaves.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from typing import TYPE_CHECKING, Any

from pygls.io_ import run_async

from driveros_lsp._stdio import ProtocolFds, open_pipes
from driveros_lsp.features.lifecycle import stop_everything

if TYPE_CHECKING:
    from driveros_lsp._server import DriverosLanguageServer

logger = logging.getLogger(__name__)


async def serve(server: DriverosLanguageServer, reader: Any, writer: Any) -> None:
    """Serve one client on ``reader``/``writer`` (pygls' async reader and writer shapes)."""
    server.protocol.set_writer(writer)
    try:
        await run_async(
            stop_event=threading.Event(),
            reader=reader,
            protocol=server.protocol,
            logger=logger,
            error_handler=server.report_server_error,
        )
        logger.info("the client closed the connection")
    finally:
        await stop_everything(server)


async def serve_stdio(server: DriverosLanguageServer, fds: ProtocolFds) -> None:
    reader, writer = await open_pipes(fds)
    await serve(server, reader, writer)


async def serve_tcp(server: DriverosLanguageServer, host: str, port: int) -> None:
    done = asyncio.Event()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await serve(server, reader, writer)
        finally:
            writer.close()
            done.set()

    tcp = await asyncio.start_server(on_client, host, port)
    host_, port_ = tcp.sockets[0].getsockname()[:2]
    # stderr, whatever the log level: a launcher reads the port from here (with --tcp HOST:0)
    sys.stderr.write(f"driveros-lsp listening on {host_}:{port_}\n")
    sys.stderr.flush()
    async with tcp:
        await done.wait()
