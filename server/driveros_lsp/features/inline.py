"""textDocument/inlineCompletion (LSP 3.18): ghost text from the user's provider.

The work is in :mod:`driveros_lsp.inline`; this module registers the request and the
``driveros.inlineCompletion.accepted`` command an item carries. The service (and the provider
stack it imports) is made on the first request, not before ``initialize`` is answered.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from driveros_lsp.protocol import CMD_INLINE_ACCEPTED

if TYPE_CHECKING:
    from driveros_lsp._server import DriverosLanguageServer
    from driveros_lsp.inline import InlineService

logger = logging.getLogger(__name__)


def setup(server: DriverosLanguageServer) -> None:
    made: list[InlineService] = []

    def service() -> InlineService:
        if not made:
            from driveros_lsp.inline import InlineService

            made.append(InlineService(server))
        return made[0]

    @server.feature(lsp.TEXT_DOCUMENT_INLINE_COMPLETION, lsp.InlineCompletionOptions())
    async def inline_completion(
        params: lsp.InlineCompletionParams,
    ) -> lsp.InlineCompletionList | None:
        try:
            return await service().complete(params)
        except Exception:  # never a traceback to the user: no suggestion instead
            logger.exception("inline completion failed")
            return None

    @server.command(CMD_INLINE_ACCEPTED)
    def accepted(*args: Any) -> dict[str, Any]:
        from driveros_lsp._params import InlineAcceptedParams, parse

        return service().accepted(parse(CMD_INLINE_ACCEPTED, InlineAcceptedParams, args).model)
