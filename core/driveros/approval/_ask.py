"""The ``ask`` mode: the policy decides what it can, a human the rest (through an Asker)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from pathlib import Path

from driveros.approval._policies import DEFAULT_ASK_TIMEOUT, decide_in_tier
from driveros.approval._types import (
    LOCAL_TIER,
    ApprovalRequest,
    Asker,
    Decision,
    FolderAccess,
    Question,
    Tier,
)

log = logging.getLogger(__name__)


def run_key(request: ApprovalRequest) -> tuple[str, str]:
    """What "Allow for this run" remembers: the tool and the exact command string (leading
    and trailing whitespace aside), or the tool and its exact arguments. Not the program:
    allowing ``python3 probe.py`` must not allow ``python3 -c '...'``."""
    if request.command is not None:
        return request.tool, request.command.strip()
    return request.tool, json.dumps(request.arguments, sort_keys=True, default=str)


class AskApproval:
    """``--approve ask``: auto-allows what :func:`policy_decision` allows in this tier and asks
    ``asker`` about the rest.

    Questions are asked one at a time. ``Allow for this run`` allows the same request
    (:func:`run_key`) for the rest of the run without asking again; build one AskApproval per
    run. No answer within ``timeout`` seconds (None: wait forever) is a denial, and so is an
    asker that fails. When the waiting task is cancelled the question is withdrawn and
    ``CancelledError`` propagates (the agent records the denial).
    """

    name = "ask"

    def __init__(
        self,
        asker: Asker,
        *,
        workspace: str | Path | None = None,
        tier: Tier | None = None,
        timeout: float | None = DEFAULT_ASK_TIMEOUT,
        folders: Sequence[FolderAccess] = (),
    ) -> None:
        self.asker = asker
        self.folders = tuple(folders)
        self.tier = tier or LOCAL_TIER
        self._workspace = str(workspace) if workspace is not None else None
        self._timeout = timeout
        self._lock = asyncio.Lock()
        self._for_run: dict[tuple[str, str], str] = {}

    async def decide(self, request: ApprovalRequest) -> Decision:
        auto = await decide_in_tier(
            request, workspace=self._workspace, tier=self.tier, folders=self.folders
        )
        if auto.allowed:
            return auto
        async with self._lock:
            key = run_key(request)
            who = self._for_run.get(key)
            if who is not None:
                return Decision(
                    allowed=True,
                    reason="allowed for this run earlier",
                    answered_by=who,
                    scope="run",
                )
            question = Question(request=request, tier=self.tier, reason=auto.reason)
            try:
                async with asyncio.timeout(self._timeout):
                    answer = await self.asker.ask(question)
            except TimeoutError:
                return Decision(
                    allowed=False,
                    reason=f"denied: no answer within {self._timeout:g} s",
                    asked=True,
                    answered_by="timeout",
                )
            except Exception as exc:  # an asker is a plug-in boundary: a failure is a denial
                log.warning("asking for approval failed: %s", exc, exc_info=True)
                return Decision(
                    allowed=False,
                    reason=f"denied: the question could not be asked ({exc})",
                    asked=True,
                    answered_by="error",
                )
            match answer.choice:
                case "allow_once":
                    return Decision(
                        allowed=True,
                        reason="approved by the user",
                        asked=True,
                        answered_by=answer.by,
                        scope="once",
                    )
                case "allow_run":
                    self._for_run[key] = answer.by
                    return Decision(
                        allowed=True,
                        reason="approved by the user for this run",
                        asked=True,
                        answered_by=answer.by,
                        scope="run",
                    )
                case _:
                    why = answer.reason.strip()
                    return Decision(
                        allowed=False,
                        reason="denied by the user" + (f": {why}" if why else ""),
                        asked=True,
                        answered_by=answer.by,
                    )
