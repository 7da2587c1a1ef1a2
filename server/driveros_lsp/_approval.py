"""Approval mode ``ask`` in the editor: questions as ``window/showMessageRequest``.

The agent's :class:`~driveros.approval.AskApproval` decides what the policy allows on
its own and hands the rest to an :class:`EditorAsker`. The run executes on the agent loop
(a worker thread); the question is sent from the protocol loop, and the run waits for the
answer. ``AskApproval`` applies the timeout (``approvalTimeoutS``) and serializes questions;
cancelling the run cancels the wait, which withdraws the request (``$/cancelRequest``).

A client that does not advertise ``window.showMessage.messageActionItem`` is never asked:
its runs use ``policy`` (:func:`effective_approval`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from driveros_lsp.protocol import ASK_ACTIONS

if TYPE_CHECKING:
    from driveros.approval import Answer, Question
    from driveros_lsp._editor import ClientTraits, Editor
    from driveros_lsp._settings import Settings

logger = logging.getLogger(__name__)

SHOW_MESSAGE_REQUEST = "window/showMessageRequest"
NO_ACTIONS_PROBLEM = (
    "setting 'approval': 'ask' needs a client that shows message actions "
    "(window.showMessage.messageActionItem); using 'policy'"
)


def effective_approval(settings: Settings, traits: ClientTraits) -> str:
    """The approval mode a run gets: ``ask`` falls back to ``policy`` for a client that
    cannot answer questions."""
    if settings.approval == "ask" and not traits.message_actions:
        return "policy"
    return settings.approval


def ask_problem(raw: Any, settings: Settings, traits: ClientTraits) -> str | None:
    """The one settings warning for a client that asked for ``ask`` but cannot answer."""
    if settings.approval != "ask" or traits.message_actions:
        return None
    section = raw.get("driveros", raw) if isinstance(raw, dict) else None
    if isinstance(section, dict) and section.get("approval") == "ask":
        return NO_ACTIONS_PROBLEM
    return None


def question_params(question: Question) -> lsp.ShowMessageRequestParams:
    """The request: the standard question text (tool, whole escaped command, tier, why) and
    the three answers, in order."""
    return lsp.ShowMessageRequestParams(
        type=lsp.MessageType.Warning,
        message=question.message(),
        actions=[lsp.MessageActionItem(title=title) for title in ASK_ACTIONS],
    )


class EditorAsker:
    """An ``Asker`` for one run: each question is one ``window/showMessageRequest``.

    :meth:`ask` runs on the agent loop; the request is sent and awaited on the protocol loop.
    A null answer, an unknown title or an error answer is Deny.
    """

    def __init__(self, server: Editor, loop: asyncio.AbstractEventLoop) -> None:
        self._server = server
        self._loop = loop
        self._by = server.traits.name

    async def ask(self, question: Question) -> Answer:
        future = asyncio.run_coroutine_threadsafe(self._ask(question), self._loop)
        try:
            return await asyncio.wrap_future(future)
        finally:
            future.cancel()  # withdraws the question when this wait was cancelled

    async def _ask(self, question: Question) -> Answer:
        from driveros.approval import Answer

        msg_id = f"driveros-ask-{uuid.uuid4().hex[:12]}"
        protocol = self._server.protocol
        sent = protocol.send_request(SHOW_MESSAGE_REQUEST, question_params(question), msg_id=msg_id)
        try:
            item = await asyncio.wrap_future(sent)
        except asyncio.CancelledError:
            sent.cancel()
            try:
                protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=msg_id))
            except Exception as exc:  # the client is gone: nothing to withdraw
                logger.debug("could not withdraw question %s: %s", msg_id, exc)
            raise
        except Exception as exc:  # an error answer: nobody allowed anything
            logger.warning("window/showMessageRequest failed: %s", exc)
            return Answer(choice="deny", by=self._by, reason="the editor could not ask")
        title = item.title if isinstance(item, lsp.MessageActionItem) else None
        return Answer.from_title(title if isinstance(title, str) else None, by=self._by)
