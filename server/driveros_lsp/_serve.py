"""Run a server over the protocol pipes or one TCP connection (driveros_lsp._tcp) until the
client goes away.

However the session ends (``exit``, stdin EOF, a dropped socket, SIGTERM, SIGHUP, SIGQUIT,
SIGINT), every run is canceled and every scratch copy released before the process leaves;
in the server process (:func:`run_process`) that cleanup gets :data:`CLEANUP_DEADLINE_S`,
then the process exits anyway (what is left is collected by the next start).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from driveros_lsp._stdio import open_pipes
from driveros_lsp._wire import read_messages
from driveros_lsp.features.lifecycle import stop_everything

if TYPE_CHECKING:
    from driveros.stdio import ProtocolFds
    from driveros_lsp._server import DriverosLanguageServer

logger = logging.getLogger(__name__)

#: Signals that end the server like a client that went away.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
#: Seconds the cleanup may take once the session ended, before the process exits anyway.
CLEANUP_DEADLINE_S = 5.0


class _Deadline:
    """In the server process only: a timer that ends the process if cleanup hangs."""

    enabled = False
    _timer: threading.Timer | None = None

    @classmethod
    def arm(cls) -> None:
        if not cls.enabled or cls._timer is not None:
            return
        cls._timer = threading.Timer(CLEANUP_DEADLINE_S, _hard_exit)
        cls._timer.daemon = True
        cls._timer.start()


def _hard_exit() -> None:
    try:
        sys.stderr.write(
            f"driveros-lsp: cleanup took longer than {CLEANUP_DEADLINE_S:g} s; exiting anyway\n"
        )
        sys.stderr.flush()
    finally:
        os._exit(1)


async def run_process(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` (a serve coroutine) as the server process.

    Collects what ended driveros processes left behind (logged), and turns the stop signals
    into the same cleanup as a client that went away, bounded by :data:`CLEANUP_DEADLINE_S`.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(main)
    stopped: list[signal.Signals] = []

    def stop(sig: signal.Signals) -> None:
        logger.warning("driveros-lsp: %s received: stopping", sig.name)
        stopped.append(sig)
        _Deadline.arm()
        task.cancel()

    _Deadline.enabled = True
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop, sig)
    gc = asyncio.ensure_future(_collect_garbage())
    try:
        await task
    except asyncio.CancelledError:
        if not stopped:
            raise
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
        if not gc.done():
            gc.cancel()
        await asyncio.gather(gc, return_exceptions=True)


#: Seconds the start-up garbage collection waits: a client sends ``initialize`` at once, and
#: its answer should not share the CPU with importing driveros.state (and pydantic).
GC_AFTER_S = 1.0


async def _collect_garbage() -> None:
    await asyncio.sleep(GC_AFTER_S)
    state = await asyncio.to_thread(importlib.import_module, "driveros.state")
    await state.startup_gc()


async def serve(server: DriverosLanguageServer, reader: Any, writer: Any) -> None:
    """Serve one client on ``reader``/``writer`` (pygls' async reader and writer shapes)."""
    server.protocol.set_writer(writer)
    try:
        await read_messages(reader, server.protocol)
        logger.info("the client closed the connection")
    finally:
        _Deadline.arm()
        await stop_everything(server)


async def serve_stdio(server: DriverosLanguageServer, fds: ProtocolFds) -> None:
    reader, writer = await open_pipes(fds)
    await serve(server, reader, writer)
