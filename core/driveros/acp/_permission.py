"""``session/request_permission``: the ACP client as the asker of the ``ask`` mode, and the
permission question for one proposed edit."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal

from acp import schema

from driveros.acp._updates import (
    UpdateStream,
    locations,
    new_call_id,
    text_block,
    tool_kind,
    tool_title,
)
from driveros.approval import Answer, Question

#: The four options every permission request offers, in this order.
OPTIONS: tuple[schema.PermissionOption, ...] = (
    schema.PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    schema.PermissionOption(
        option_id="allow_always", name="Allow for this session", kind="allow_always"
    ),
    schema.PermissionOption(option_id="reject_once", name="Reject", kind="reject_once"),
    schema.PermissionOption(
        option_id="reject_always", name="Reject for this session", kind="reject_always"
    ),
)

Verdict = Literal["allow_once", "allow_always", "reject_once", "reject_always", "cancelled"]
RequestPermission = Callable[
    [schema.ToolCallUpdate, list[schema.PermissionOption]],
    Awaitable[schema.RequestPermissionResponse],
]


def verdict_of(response: schema.RequestPermissionResponse) -> Verdict:
    """The chosen option; anything unknown is a rejection, a cancelled request ``cancelled``."""
    outcome = response.outcome
    if isinstance(outcome, schema.DeniedOutcome):
        return "cancelled"
    match outcome.option_id:
        case "allow_once":
            return "allow_once"
        case "allow_always":
            return "allow_always"
        case "reject_always":
            return "reject_always"
        case _:
            return "reject_once"


class AcpAsker:
    """Asks the ACP client about a tool call the policy would not allow on its own.

    The question is about the model's own tool call: it reuses that call's ``toolCallId``
    (announced before the question, by ``stream``) and carries its ``locations``; a request
    with no tool call of its own (a custom check) is announced first as a tool call of its
    own and given a final status once answered. ``allow_always`` allows the same request for
    the rest of the run (the approval layer's ``allow_run``); ``reject_always`` rejects every
    later question of this session without asking again. A cancelled request is a denial.
    """

    def __init__(
        self,
        request_permission: RequestPermission,
        *,
        stream: UpdateStream | None = None,
        workspace: Path | None = None,
    ) -> None:
        self._request = request_permission
        self._stream = stream
        self._workspace = workspace
        self.rejecting = False

    async def ask(self, question: Question) -> Answer:
        if self.rejecting:
            return Answer(choice="deny", by="acp", reason="rejected for this session")
        request = question.request
        stream = self._stream
        call_id = stream.call_id_of(request.call_id) if stream is not None else None
        own = call_id is None
        title = tool_title(request.tool, request.arguments)
        where = locations(self._workspace, request.arguments) if self._workspace else None
        if call_id is None:
            call_id = new_call_id()
            if stream is not None:
                stream.open_calls[call_id] = request.tool
                await stream.emit(
                    schema.ToolCallStart(
                        session_update="tool_call",
                        tool_call_id=call_id,
                        title=title,
                        kind=tool_kind(request.tool),
                        status="pending",
                        locations=where,
                        raw_input=request.arguments,
                    )
                )
        call = schema.ToolCallUpdate(
            tool_call_id=call_id,
            title=title,
            kind=tool_kind(request.tool),
            status="pending",
            raw_input=request.arguments,
            locations=where,
            content=[
                schema.ContentToolCallContent(
                    type="content", content=text_block(question.message())
                )
            ],
        )
        answer = _answer(verdict_of(await self._request(call, list(OPTIONS))))
        if answer.choice == "deny" and answer.reason == "rejected for this session":
            self.rejecting = True
        if own and stream is not None:
            stream.open_calls.pop(call_id, None)
            await stream.emit(
                schema.ToolCallProgress(
                    session_update="tool_call_update",
                    tool_call_id=call_id,
                    status="completed" if answer.choice != "deny" else "failed",
                    raw_output={"allowed": answer.choice != "deny"},
                )
            )
        return answer


def _answer(verdict: Verdict) -> Answer:
    match verdict:
        case "allow_once":
            return Answer(choice="allow_once", by="acp")
        case "allow_always":
            return Answer(choice="allow_run", by="acp")
        case "reject_always":
            return Answer(choice="deny", by="acp", reason="rejected for this session")
        case "cancelled":
            return Answer(choice="deny", by="acp", reason="the request was cancelled")
        case _:
            return Answer(choice="deny", by="acp")
