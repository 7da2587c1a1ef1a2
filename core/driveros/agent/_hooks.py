"""Seams between the agent loop and the parts that plug into it.

- :class:`StuckDetector` — a named detector fed one :class:`TurnObservation` per turn.
- :class:`DiagnosticsSource` — the build-diagnostics feed (implemented in driveros.intel).
- :class:`MemoryHook` — recall before thinking, store after a verified answer
  (implemented in driveros.memory).

These are protocols so the loop never imports the implementations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from driveros.diagnostics import DiagnosticsSnapshot
from driveros.llm import Message


class ToolObservation(BaseModel):
    model_config = ConfigDict(frozen=True)

    call_id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    ok: bool
    output: str
    #: True when the call was refused by the approval policy.
    blocked: bool = False


class TurnObservation(BaseModel):
    """Everything a stuck detector may look at for one turn."""

    model_config = ConfigDict(frozen=True)

    turn: int
    text: str = ""
    tool_calls: tuple[ToolObservation, ...] = ()
    #: True when a tool changed a file this turn.
    edited: bool = False
    #: The diagnostics snapshot taken after this turn's edits, when a feed is attached.
    diagnostics: DiagnosticsSnapshot | None = None


class StuckVerdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    detector: str
    detail: str
    evidence: tuple[str, ...] = ()


@runtime_checkable
class StuckDetector(Protocol):
    """Fed every turn in order; returns a verdict when it judges the run stuck."""

    @property
    def name(self) -> str: ...

    def observe(self, obs: TurnObservation) -> StuckVerdict | None: ...


@runtime_checkable
class DiagnosticsSource(Protocol):
    """The build-diagnostics feed over the run's sandbox."""

    async def snapshot(self, *, changed: Sequence[str] = ()) -> DiagnosticsSnapshot: ...


@runtime_checkable
class MemoryHook(Protocol):
    """Long-term memory as the agent sees it. Every call is bounded and best-effort."""

    async def recall(self, task: str, *, limit: int = 8) -> list[str]: ...

    async def store(
        self,
        *,
        task: str,
        answer: str,
        transcript: Sequence[Message],
        verified: bool,
        run_id: str,
    ) -> int: ...
