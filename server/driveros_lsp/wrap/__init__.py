"""``driveros-lsp --wrap -- CMD ARGS…``: driveros in front of the user's own language server.

For clients that attach one server per buffer (eglot): every message passes between the
client and the inner server unchanged, except the few the wrapper merges (capabilities, code
actions, shutdown, diagnostics); driveros adds "Ask agent to fix" for the inner server's
diagnostics. See :mod:`driveros_lsp.wrap._proxy` and docs/wrap.md, "Wrapping another
server".
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from driveros_lsp._stdio import open_pipes
from driveros_lsp.wrap._inner import InnerServer
from driveros_lsp.wrap._proxy import Wrapper

if TYPE_CHECKING:
    from driveros.stdio import ProtocolFds
    from driveros_lsp._server import DriverosLanguageServer

__all__ = ["InnerServer", "Wrapper", "serve_wrapped"]


async def serve_wrapped(server: DriverosLanguageServer, fds: ProtocolFds, argv: list[str]) -> None:
    """Start ``argv`` and serve the client on ``fds`` until it goes away.

    A command that cannot start is said on stderr and the session ends at once (the editor
    reports the server's exit; ``driveros-lsp`` exits 1)."""
    inner = InnerServer(argv)
    try:
        await inner.start()
    except OSError as exc:
        sys.stderr.write(
            f"driveros-lsp: error: --wrap cannot start {argv[0]!r}: {exc.strerror or exc}\n"
        )
        sys.stderr.flush()
        return
    reader, writer = await open_pipes(fds)
    await Wrapper(server, inner, writer).serve(reader)
