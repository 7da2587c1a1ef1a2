"""Session modes and the approval policy each one stands for."""

from __future__ import annotations

from typing import Literal, get_args

from acp import schema

from driveros.agent import ApproveMode

ModeId = Literal["ask", "auto", "read-only"]
MODE_IDS: tuple[ModeId, ...] = get_args(ModeId)

MODES: tuple[schema.SessionMode, ...] = (
    schema.SessionMode(
        id="ask",
        name="Ask",
        description="Safe commands run; anything else asks you first. Every edit asks.",
    ),
    schema.SessionMode(
        id="auto",
        name="Auto",
        description="No questions about commands: everything runs in a contained tier "
        "(docker, network off), the allowlist elsewhere, the rest is refused. Every edit asks.",
    ),
    schema.SessionMode(
        id="read-only",
        name="Read-only",
        description="Only reading tools; no command, no edit.",
    ),
)


#: The ``approve`` mode of the run (driveros.runs.RunSpec) for each session mode.
APPROVE: dict[str, ApproveMode] = {"ask": "ask", "auto": "policy", "read-only": "never"}


def mode_state(current: ModeId) -> schema.SessionModeState:
    return schema.SessionModeState(current_mode_id=current, available_modes=list(MODES))
