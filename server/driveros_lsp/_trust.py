"""Workspace trust in the editor: ask once per workspace, remember "trust" in the user's store.

Before a run starts, :meth:`WorkspaceTrust.prepare` decides whether its workspace is trusted
(docs/security.md, "Workspace trust"):

- trusted in the user's store (``driveros trust``, or an earlier answer): trusted;
- the workspace holds nothing trust would change (no ``.env``, ``.driveros.toml`` or
  ``[tool.driveros]``): untrusted, silently (nothing to ask about);
- the client advertises ``window.showMessage.messageActionItem``: ask once per workspace and
  session through ``window/showMessageRequest`` ("Trust this workspace" / "Not now");
  "Trust this workspace" is remembered in the store, anything else (dismissed, an error) means
  untrusted for this session;
- otherwise: untrusted, and one log message says how to trust it.

Editor settings never grant trust: a repository can ship its own ``.vscode/settings.json``.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

if TYPE_CHECKING:
    from driveros_lsp._editor import Editor
    from driveros_lsp._runner import RunRequest

logger = logging.getLogger(__name__)

TRUST_ACTION = "Trust this workspace"
NOT_NOW_ACTION = "Not now"


def _workspace_state(root: Path) -> tuple[bool, bool]:
    """(trusted in the store, holds configuration that trust would enable). Blocking."""
    from driveros.intel import has_workspace_config
    from driveros.trust import TrustStore

    if TrustStore.default().is_trusted(root):
        return True, True
    env = root / ".env"
    return False, env.is_file() or has_workspace_config(root)


def _remember(root: Path) -> None:
    from driveros.trust import TrustStore

    TrustStore.default().trust(root)


class WorkspaceTrust:
    """Decides, per workspace root, whether runs may use its configuration."""

    def __init__(self, server: Editor) -> None:
        self._server = server
        #: Resolved root -> this session's decision (shared by runs that start together).
        self._decided: dict[str, asyncio.Future[bool]] = {}
        self._told: set[str] = set()

    async def prepare(self, request: RunRequest) -> RunRequest:
        """``request`` with ``trusted`` decided (the hook where every run starts)."""
        trusted = await self.resolve(Path(request.workspace))
        return request.model_copy(update={"trusted": trusted})

    async def resolve(self, root: Path) -> bool:
        """Whether ``root`` is trusted; may ask the user (once per root and session)."""
        try:
            stored, relevant = await asyncio.to_thread(_workspace_state, root)
        except Exception:  # an unreadable store or workspace: untrusted is the safe answer
            logger.warning("trust: cannot read the state of %s", root, exc_info=True)
            return False
        if stored:
            return True
        if not relevant:
            return False
        key = str(root)
        decision = self._decided.get(key)
        if decision is None:
            decision = asyncio.ensure_future(self._decide(root))
            self._decided[key] = decision
        # one run being canceled must not cancel the question the other runs wait for
        return await asyncio.shield(decision)

    def _can_ask(self) -> bool:
        caps = self._server.client_capabilities
        window = caps.window if caps is not None else None
        show = window.show_message if window is not None else None
        return show is not None and show.message_action_item is not None

    async def _decide(self, root: Path) -> bool:
        if not self._can_ask():
            self._tell_untrusted(root)
            return False
        params = lsp.ShowMessageRequestParams(
            type=lsp.MessageType.Warning,
            message=(
                f"DriverOS: trust the workspace {root}? Trusted, its .env (provider keys and "
                "endpoints) and its .driveros.toml / [tool.driveros] diagnostics checks are "
                "used; check commands still need approval. Untrusted, they are ignored."
            ),
            actions=[
                lsp.MessageActionItem(title=TRUST_ACTION),
                lsp.MessageActionItem(title=NOT_NOW_ACTION),
            ],
        )
        try:
            answer = await self._server.window_show_message_request_async(params)
        except Exception as exc:  # the client failed the request: not an answer
            logger.info("trust: the client did not answer the trust question: %s", exc)
            self._tell_untrusted(root)
            return False
        if answer is None or answer.title != TRUST_ACTION:
            self._tell_untrusted(root)
            return False
        try:
            await asyncio.to_thread(_remember, root)
        except Exception as exc:  # e.g. the store refuses the home directory
            message = f"driveros: {root} is trusted for this session only: {exc}"
            logger.warning("%s", message)
            self._server.log(message, lsp.MessageType.Warning)
        return True

    def _tell_untrusted(self, root: Path) -> None:
        if str(root) in self._told:
            return
        self._told.add(str(root))
        message = (
            f"driveros: the workspace {root} is not trusted: its .env, .driveros.toml and "
            f"[tool.driveros] are not used. Run `driveros trust {root}` to trust it."
        )
        logger.warning("%s", message)
        self._server.log(message, lsp.MessageType.Warning)
