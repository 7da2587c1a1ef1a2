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


def message_chars(message: Message) -> int:
    chars = 8  # role and framing
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
    return chars


def tools_chars(tools: Sequence[ToolSpec]) -> int:
    return sum(len(t.name) + len(t.description) + len(json.dumps(t.parameters)) for t in tools)


def estimate_tokens(messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> int:
    chars = sum(message_chars(m) for m in messages) + tools_chars(tools)
    return chars // CHARS_PER_TOKEN + 1


class ContextMeter:
    """Incremental token estimate of a growing history (each message is measured once)."""

    def __init__(self, tools: Sequence[ToolSpec] = (), fixed: str = "") -> None:
        self._base = tools_chars(tools) + len(fixed)
        self._seen: dict[int, tuple[Message, int]] = {}

    def estimate(self, messages: Sequence[Message]) -> int:
        chars = self._base
        seen: dict[int, tuple[Message, int]] = {}
        for message in messages:
            entry = self._seen.get(id(message))
            if entry is None or entry[0] is not message:
                entry = (message, message_chars(message))
            seen[id(message)] = entry
            chars += entry[1]
        self._seen = seen
        return chars // CHARS_PER_TOKEN + 1


def trim_tool_outputs(
    messages: list[Message], *, budget: int, meter: ContextMeter, keep_last: int = 1
) -> int:
    """Replace the oldest tool outputs with a short marker until the estimate fits ``budget``.

    The last ``keep_last`` tool messages are never trimmed. Returns the new estimate; the
    list is modified in place.
    """
    estimate = meter.estimate(messages)
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
        estimate = meter.estimate(messages)
    return estimate


#: What the loop asks the model when the conversation nears the budget (docs/events.md).
SUMMARY_REQUEST = (
    "The conversation is getting too long for the context window. Summarize the work so far "
    "so that you can continue from your summary alone; do not call tools. Use exactly these "
    "headings:\n"
    "## Task\n(what was asked, in full, and any constraints)\n"
    "## Files read\n(paths, and what matters in each)\n"
    "## Files touched\n(paths, and what was changed)\n"
    "## What was tried\n(commands and edits, and what happened)\n"
    "## What the build says now\n(the latest test/check results, errors verbatim)\n"
    "## Next steps"
)
SUMMARY_HEADER = (
    "[The earlier conversation was compacted to save context. Your summary of it follows; "
    "the most recent turns come after it verbatim.]"
)


def compaction_cut(history: Sequence[Message], keep_turns: int) -> int | None:
    """Where a compaction cuts ``history``: the index of the ``keep_turns``-th last assistant
    message, so every kept turn stays whole (signed thinking with its tool calls, the tool
    calls with their results). None when nothing lies between the task and that point."""
    starts = [i for i, m in enumerate(history) if m.role == "assistant"]
    if len(starts) <= keep_turns:
        return None
    cut = starts[-keep_turns]
    return cut if cut > 1 else None


def compacted(history: Sequence[Message], cut: int, summary: str) -> list[Message]:
    """The task message, the summary, then ``history[cut:]`` unchanged."""
    note = Message(role="user", parts=(TextPart(text=f"{SUMMARY_HEADER}\n\n{summary}"),))
    return [history[0], note, *history[cut:]]
