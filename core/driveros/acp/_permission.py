"""``session/request_permission``: the ACP client as the asker of the ``ask`` mode, and the
permission question for one proposed edit."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Literal

from acp import schema

from driveros.acp._updates import tool_kind, tool_title
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

    ``allow_always`` allows the same request for the rest of the run (the approval layer's
    ``allow_run``); ``reject_always`` rejects every later question of this session without
    asking again. A cancelled request is a denial.
    """

    def __init__(self, request_permission: RequestPermission) -> None:
        self._request = request_permission
        self.rejecting = False

    async def ask(self, question: Question) -> Answer:
        if self.rejecting:
            return Answer(choice="deny", by="acp", reason="rejected for this session")
        request = question.request
        call = schema.ToolCallUpdate(
            tool_call_id=f"approval-{uuid.uuid4().hex[:12]}",
            title=tool_title(request.tool, request.arguments),
            kind=tool_kind(request.tool),
            status="pending",
            raw_input=request.arguments,
            content=[
                schema.ContentToolCallContent(
                    type="content",
                    content=schema.TextContentBlock(type="text", text=question.message()),
                )
            ],
        )
        verdict = verdict_of(await self._request(call, list(OPTIONS)))
        match verdict:
            case "allow_once":
                return Answer(choice="allow_once", by="acp")
            case "allow_always":
                return Answer(choice="allow_run", by="acp")
            case "reject_always":
                self.rejecting = True
                return Answer(choice="deny", by="acp", reason="rejected for this session")
            case "cancelled":
                return Answer(choice="deny", by="acp", reason="the request was cancelled")
            case _:
                return Answer(choice="deny", by="acp")
