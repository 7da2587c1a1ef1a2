"""The context budget: a cheap token estimate and trimming of old tool outputs."""

from __future__ import annotations

import json
from collections.abc import Sequence

from driveros.llm import (
    Message,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)

#: Characters per token for the estimate (a conservative average for code and English).
CHARS_PER_TOKEN = 4
TRIMMED = "[output trimmed to save context; run the tool again if you need it]"


def estimate_tokens(messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int:
    chars = 0
    for message in messages:
        for part in message.parts:
            match part:
                case TextPart():
                    chars += len(part.text)
                case ThinkingPart():
                    chars += len(part.text) + len(part.signature or "") + len(part.redacted or "")
                case ToolCallPart():
                    chars += len(part.name) + len(json.dumps(part.arguments))
                case ToolResultPart():
                    chars += len(part.content)
        chars += 8  # role and framing
    for tool in tools:
        chars += len(tool.name) + len(tool.description) + len(json.dumps(tool.parameters))
    return chars // CHARS_PER_TOKEN + 1


def trim_tool_outputs(
    messages: list[Message], *, budget: int, tools: Sequence[ToolSpec] = (), keep_last: int = 1
) -> int:
    """Replace the oldest tool outputs with a short marker until the estimate fits ``budget``.

    The last ``keep_last`` tool messages are never trimmed. Returns the new estimate; the
    list is modified in place.
    """
    estimate = estimate_tokens(messages, tools)
    tool_indexes = [i for i, m in enumerate(messages) if m.role == "tool"]
    candidates = tool_indexes[:-keep_last] if keep_last else tool_indexes
    for index in candidates:
        if estimate <= budget:
            break
        message = messages[index]
        parts = []
        for part in message.parts:
            if isinstance(part, ToolResultPart) and len(part.content) > len(TRIMMED):
                part = part.model_copy(update={"content": TRIMMED})
            parts.append(part)
        messages[index] = Message(role=message.role, parts=tuple(parts))
        estimate = estimate_tokens(messages, tools)
    return estimate
