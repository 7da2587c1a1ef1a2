"""Where hooks meet a run: ``pre_tool`` hooks in front of the approval policy, the other
events after the run's (already redacted) events go out."""

from __future__ import annotations

import logging
from typing import Any

from driveros.agent import ApprovalPolicy, ApprovalRequest, Decision, Event, OnEvent
from driveros.hooks._config import HookEvent, HookSet
from driveros.hooks._run import run_hook

log = logging.getLogger(__name__)

_AFTER: dict[str, HookEvent] = {
    "run_started": "run_start",
    "tool_result": "post_tool",
    "result": "run_end",
}


class HookedPolicy:
    """An approval policy with the user's ``pre_tool`` hooks asked first: a hook that blocks
    (exit 2) or errs (a timeout, a failed start) refuses the call with its reason; one that
    warns (another exit code) is logged and the policy decides as usual."""

    def __init__(self, inner: ApprovalPolicy, hooks: HookSet, *, run_id: str) -> None:
        self.inner = inner
        self.hooks = hooks
        self.run_id = run_id
        self.name = inner.name

    def __getattr__(self, name: str) -> Any:  # the policy's tier and asker, for the loop
        return getattr(self.inner, name)

    async def decide(self, request: ApprovalRequest) -> Decision:
        payload = {
            "event": "pre_tool",
            "run_id": self.run_id,
            "workspace": self.hooks.cwd,
            "tool": {"name": request.tool, "arguments": request.arguments},
        }
        for hook in self.hooks.matching("pre_tool", request.tool):
            out = await run_hook(hook, payload, cwd=self.hooks.cwd)
            if out.verdict == "block":
                why = out.reason or "no reason given"
                return Decision(allowed=False, reason=f"blocked by the user's hook: {why}")
            if out.verdict == "error":
                return Decision(
                    allowed=False,
                    reason=f"the user's hook {hook.shown!r} failed ({out.reason}); not run",
                )
            if out.verdict == "warn":
                log.warning("hook %r exited %s: %s", hook.shown, out.exit_code, out.reason)
        return await self.inner.decide(request)


def gate(policy: ApprovalPolicy, hooks: HookSet, *, run_id: str) -> ApprovalPolicy:
    """``policy`` behind the ``pre_tool`` hooks (itself when there is none)."""
    if not hooks.matching("pre_tool"):
        return policy
    return HookedPolicy(policy, hooks, run_id=run_id)


def watching(on_event: OnEvent, hooks: HookSet) -> OnEvent:
    """``on_event`` followed by the ``run_start``, ``post_tool`` and ``run_end`` hooks. These
    cannot undo what happened: any exit but 0, and a timeout, is logged as a warning."""
    if not any(hooks.matching(kind) for kind in _AFTER.values()):
        return on_event

    async def watch(event: Event) -> None:
        await on_event(event)
        kind = _AFTER.get(event.type)
        if kind is None:
            return
        tool = getattr(event, "name", None) if kind == "post_tool" else None
        payload: dict[str, Any] = {
            "event": kind,
            "run_id": event.run_id,
            "workspace": hooks.cwd,
            "data": event.model_dump(mode="json"),
        }
        if tool is not None:
            payload["tool"] = {"name": tool, "call_id": getattr(event, "call_id", "")}
        for hook in hooks.matching(kind, tool):
            out = await run_hook(hook, payload, cwd=hooks.cwd)
            if out.verdict != "allow":
                log.warning("%s hook %r: %s %s", kind, hook.shown, out.verdict, out.reason)

    return watch
