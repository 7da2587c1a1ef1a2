"""Response mapping: an Anthropic ``message`` object -> driveros ``Response``.

The stream state machine (``_anthropic_stream``) rebuilds this object from the events and
calls :func:`parse_message`, so both paths agree by construction.
"""

from __future__ import annotations

import json
from typing import Any

from driveros.llm._anthropic_request import FAMILY
from driveros.llm._types import (
    Part,
    Response,
    StopReason,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
    parse_arguments,
    token_count,
)

_STOP = {
    "end_turn": StopReason.END_TURN,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "model_context_window_exceeded": StopReason.MAX_TOKENS,
    "stop_sequence": StopReason.STOP_SEQUENCE,
    "refusal": StopReason.REFUSAL,
    "pause_turn": StopReason.PAUSE,
}


def parse_usage(raw: Any) -> Usage:
    """``input_tokens`` counts every prompt token: uncached + cache read + cache write."""
    if not isinstance(raw, dict):
        return Usage()
    fresh = token_count(raw.get("input_tokens"))
    read = token_count(raw.get("cache_read_input_tokens"))
    write = token_count(raw.get("cache_creation_input_tokens"))
    output = token_count(raw.get("output_tokens"))
    details = raw.get("output_tokens_details") or {}
    total_input = fresh + read + write
    return Usage(
        input_tokens=total_input,
        output_tokens=output,
        total_tokens=total_input + output,
        cache_read_tokens=read,
        cache_write_tokens=write,
        reasoning_tokens=token_count(details.get("thinking_tokens")),
    )


def _tool_call(block: dict[str, Any]) -> ToolCallPart:
    raw = block.get("input")
    if isinstance(raw, dict):
        arguments, bad = raw, None
    else:
        # A stream cut by max_tokens leaves the input JSON unfinished; keep it raw.
        arguments, bad = parse_arguments(raw if isinstance(raw, str) else json.dumps(raw))
    return ToolCallPart(
        id=str(block.get("id") or ""),
        name=str(block.get("name") or ""),
        arguments=arguments,
        raw_arguments=bad,
    )


def parse_blocks(content: list[Any]) -> list[Part]:
    parts: list[Part] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            if block.get("text"):
                parts.append(TextPart(text=block["text"]))
        elif kind == "thinking":
            parts.append(
                ThinkingPart(
                    text=block.get("thinking") or "",
                    signature=block.get("signature") or None,
                    provider=FAMILY,
                )
            )
        elif kind == "redacted_thinking":
            parts.append(ThinkingPart(redacted=block.get("data") or "", provider=FAMILY))
        elif kind == "tool_use":
            parts.append(_tool_call(block))
        # Unknown and server-side block types (fallback, server_tool_use, ...) are skipped.
    return parts


def parse_message(data: dict[str, Any], *, provider: str, model: str) -> Response:
    parts = parse_blocks(data.get("content") or [])
    raw_stop = data.get("stop_reason")
    stop = _STOP.get(raw_stop, StopReason.OTHER) if raw_stop else StopReason.END_TURN
    return Response(
        parts=tuple(parts),
        stop_reason=stop,
        raw_stop_reason=raw_stop,
        usage=parse_usage(data.get("usage")),
        model=str(data.get("model") or model),
        provider=provider,
        id=data.get("id"),
    )
