"""driveros-lsp with asyncio debug mode: every callback slower than argv[1] seconds is logged
to the file argv[2] (a blocking-call detector for the server's event loop)."""

from __future__ import annotations

import asyncio
import logging
import sys

from driveros_lsp import create_server
from driveros_lsp._serve import serve_stdio
from driveros_lsp._stdio import claim_stdio


def run() -> None:
    fds = claim_stdio()
    slow, log_file = float(sys.argv[1]), sys.argv[2]
    handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
    logging.getLogger("asyncio").addHandler(handler)
    logging.getLogger("asyncio").setLevel(logging.WARNING)
    server = create_server()

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        loop.set_debug(True)
        loop.slow_callback_duration = slow
        await serve_stdio(server, fds)

    asyncio.run(serve())


if __name__ == "__main__":
    run()
