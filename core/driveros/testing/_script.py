"""The script a :class:`ScriptedModelServer` plays: turns, tool calls, errors, usage.

A script file (for ``python -m driveros.testing.scripted``) is a JSON list of turns, or an
object ``{"turns": [...], "repeat_last": false}``. Each turn is an object with the fields of
:class:`Turn`; ``tool_calls`` entries have ``name``, ``arguments`` (an object, or a string sent
verbatim, which lets a test send malformed JSON) and an optional ``id``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, TypeAdapter
from pydantic.dataclasses import dataclass

_CONFIG = ConfigDict(extra="forbid")


@dataclass(frozen=True, config=_CONFIG)
class ToolCallSpec:
    """One tool call the scripted model makes. ``arguments`` may be a raw string."""

    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = None

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True, config=_CONFIG)
class ScriptedError:
    """An HTTP error answer: ``status`` plus a body (default: the endpoint's own error shape)."""

    status: int
    body: dict[str, Any] | str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    message: str = "scripted error"


@dataclass(frozen=True, config=_CONFIG)
class TurnUsage:
    input_tokens: int = 100
    output_tokens: int = 20
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass(frozen=True, config=_CONFIG)
class Turn:
    """One model reply. Turns play in order, one per request, across both endpoints.

    ``delay_s`` waits before the first byte (useful to test cancellation); ``interval_s``
    paces the frames of a streamed answer. ``error`` answers
    with an HTTP error instead (it still consumes the turn). ``stop_reason`` overrides the
    natural one ("max_tokens", "refusal", ...), in the wire's own vocabulary mapping below.
    """

    text: str = ""
    thinking: str = ""
    #: Anthropic thinking signature; generated when thinking is set and this is None.
    signature: str | None = None
    tool_calls: list[ToolCallSpec] = Field(default_factory=list)
    delay_s: float = 0.0
    #: Pause between streamed frames, to pace a stream like a real model (0: as fast as possible).
    interval_s: float = 0.0
    error: ScriptedError | None = None
    usage: TurnUsage | None = None
    #: "end_turn" | "tool_use" | "max_tokens" | "refusal"; None picks from the content.
    stop_reason: str | None = None


EXHAUSTED_TEXT = "script exhausted"

_TURNS = TypeAdapter(list[Turn])


def load_script(path: Path) -> tuple[list[Turn], bool]:
    """Read a script file: ``(turns, repeat_last)``."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict):
        return _TURNS.validate_python(data.get("turns", [])), bool(data.get("repeat_last", False))
    return _TURNS.validate_python(data), False


def parse_turns(data: Any) -> list[Turn]:
    """Validate plain data (e.g. parsed JSON) into turns."""
    return _TURNS.validate_python(data)
