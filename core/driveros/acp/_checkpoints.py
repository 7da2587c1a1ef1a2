"""The ``/checkpoints`` session command: the last prompt's checkpoints, answered without a
model request (docs/acp.md, "Checkpoints")."""

from __future__ import annotations

from collections.abc import Sequence

from driveros._unicode import printable
from driveros.agent import CheckpointInfo

#: The prompt text that asks for them.
COMMAND = "/checkpoints"


def is_checkpoints_command(text: str) -> bool:
    return text.strip() == COMMAND


def checkpoints_text(checkpoints: Sequence[CheckpointInfo]) -> str:
    """One line per checkpoint of the last prompt's run: number, turn, the files it changed."""
    if not checkpoints:
        return "No checkpoints: the last prompt changed no file (or no prompt ran yet)."
    lines = [f"Checkpoints of the last prompt ({len(checkpoints)}):"]
    for c in checkpoints:
        files = ", ".join(printable(f) for f in c.files)
        lines.append(f"{c.checkpoint}. turn {c.turn}: {files}")
    return "\n".join(lines)
