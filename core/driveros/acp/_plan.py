"""The prompt's plan as ACP ``plan`` updates.

driveros has no model-written to-do list; what it does for every prompt is fixed, and that is
the plan the client shows: work on the task in a private copy, then one review step per
proposed change (shown as a diff, asked about, written or not). Each update carries the whole
plan (the protocol's rule: the client replaces what it showed).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from acp import schema

Status = schema.PlanEntryStatus
WORK = "Work on the task in a private copy of the workspace (your files are not touched)"


@dataclass
class _Entry:
    content: str
    status: Status
    priority: schema.PlanEntryPriority


class RunPlan:
    """The plan of one prompt; ``emit`` sends an update (the session's stream)."""

    def __init__(self, emit: Callable[[schema.AgentPlanUpdate], Awaitable[None]]) -> None:
        self._emit = emit
        self._entries: list[_Entry] = []
        self._reviews: dict[str, int] = {}

    async def _send(self) -> None:
        await self._emit(
            schema.AgentPlanUpdate(
                session_update="plan",
                entries=[
                    schema.PlanEntry(content=e.content, status=e.status, priority=e.priority)
                    for e in self._entries
                ],
            )
        )

    async def started(self) -> None:
        self._entries = [_Entry(WORK, "in_progress", "high")]
        await self._send()

    async def finished(self, proposed: list[tuple[str, str]], outcome: str) -> None:
        """The run ended with ``outcome``; ``proposed``: (path, title) of each change to
        review, in order."""
        self._entries[0].status = "completed"
        if outcome not in ("answered", "unverified"):
            self._entries[0].content = f"{WORK}: ended {outcome.replace('_', ' ')}"
        for path, title in proposed:
            self._reviews[path] = len(self._entries)
            self._entries.append(_Entry(f"Review: {title}", "pending", "medium"))
        await self._send()

    async def reviewing(self, path: str) -> None:
        await self._set(path, "in_progress", None)

    async def reviewed(self, path: str, outcome: str) -> None:
        await self._set(path, "completed", outcome)

    async def _set(self, path: str, status: Status, outcome: str | None) -> None:
        index = self._reviews.get(path)
        if index is None:
            return
        entry = self._entries[index]
        entry.status = status
        if outcome is not None:
            entry.content = f"{entry.content}: {outcome}"
        await self._send()
