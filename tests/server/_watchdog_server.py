"""driveros-lsp with a blocking-call detector on its event loop.

Every loop callback that burns more than argv[1] seconds of CPU, and every classic blocking
call (``time.sleep``, ``subprocess`` waits) made on the loop thread, is written to the file
argv[2]. CPU time (not wall time) keeps the detector honest on a busy machine.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from driveros.stdio import claim_stdio
from driveros_lsp import create_server
from driveros_lsp._serve import serve_stdio


def install(limit: float, report: Callable[[str], None]) -> None:
    loop_thread = threading.get_ident()
    run_handle = asyncio.events.Handle._run

    def timed_run(self: asyncio.events.Handle) -> None:
        start = time.thread_time()
        run_handle(self)
        spent = time.thread_time() - start
        if spent > limit:
            report(f"BLOCKED {spent:.3f}s of CPU in {self!r}")

    def guard(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() == loop_thread:
                report(f"BLOCKED by {name} on the event loop")
            return fn(*args, **kwargs)

        return wrapped

    asyncio.events.Handle._run = timed_run  # type: ignore[method-assign]
    time.sleep = guard("time.sleep", time.sleep)
    subprocess.run = guard("subprocess.run", subprocess.run)  # type: ignore[assignment]
    subprocess.Popen.wait = guard("Popen.wait", subprocess.Popen.wait)  # type: ignore[method-assign]
    subprocess.Popen.communicate = guard(  # type: ignore[method-assign]
        "Popen.communicate", subprocess.Popen.communicate
    )


def run() -> None:
    fds = claim_stdio()
    limit, log_file = float(sys.argv[1]), sys.argv[2]
    lock = threading.Lock()

    def report(line: str) -> None:
        with lock, open(log_file, "a") as fh:
            fh.write(line + "\n")

    server = create_server()

    async def serve() -> None:
        install(limit, report)
        await serve_stdio(server, fds)

    asyncio.run(serve())


if __name__ == "__main__":
    run()
