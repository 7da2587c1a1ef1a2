"""The LLM driver layer: typed messages, one provider protocol, many providers.

from driveros import llm
from driveros.llm import openaicompat, anthropic
"""

from driveros.llm._provider import Provider
from driveros.llm._types import (
    Effort,
    Message,
    Part,
    Request,
    Response,
    Role,
    StopReason,
    StreamDone,
    StreamEvent,
    TextDelta,
    TextPart,
    ThinkingDelta,
    ThinkingPart,
    ToolCallDelta,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
    UsageDelta,
    assistant,
    parse_arguments,
    system,
    tool_results,
    user,
)

__all__ = [
    "Effort",
    "Message",
    "Part",
    "Provider",
    "Request",
    "Response",
    "Role",
    "StopReason",
    "StreamDone",
    "StreamEvent",
    "TextDelta",
    "TextPart",
    "ThinkingDelta",
    "ThinkingPart",
    "ToolCallDelta",
    "ToolCallPart",
    "ToolResultPart",
    "ToolSpec",
    "Usage",
    "UsageDelta",
    "assistant",
    "parse_arguments",
    "system",
    "tool_results",
    "user",
]
