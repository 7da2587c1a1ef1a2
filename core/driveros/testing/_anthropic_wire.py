"""Anthropic Messages wire format for a scripted turn (JSON body and SSE events)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from driveros.testing._openai_wire import split
from driveros.testing._script import ScriptedError, Turn, TurnUsage


def _stop_reason(turn: Turn) -> str:
    if turn.stop_reason is not None:
        return turn.stop_reason
    return "tool_use" if turn.tool_calls else "end_turn"


def _signature(turn: Turn, rid: str) -> str:
    return turn.signature if turn.signature is not None else f"sig-{rid}"


def _usage(usage: TurnUsage, *, output: int) -> dict[str, Any]:
    # Anthropic's input_tokens excludes cached tokens; they are reported separately.
    return {
        "input_tokens": max(
            usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens, 0
        ),
        "cache_read_input_tokens": usage.cache_read_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "output_tokens": output,
    }


def message(turn: Turn, *, ids: list[str], model: str, rid: str, usage: TurnUsage) -> Any:
    """The non-streaming ``message`` object."""
    content: list[dict[str, Any]] = []
    if turn.thinking:
        content.append(
            {"type": "thinking", "thinking": turn.thinking, "signature": _signature(turn, rid)}
        )
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    for call_id, call in zip(ids, turn.tool_calls, strict=True):
        raw = call.arguments_json()
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        content.append({"type": "tool_use", "id": call_id, "name": call.name, "input": value})
    return {
        "id": rid,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": _stop_reason(turn),
        "stop_sequence": None,
        "usage": _usage(usage, output=usage.output_tokens),
    }


def stream_events(
    turn: Turn, *, ids: list[str], model: str, rid: str, usage: TurnUsage, chunk: int
) -> Iterator[bytes]:
    """SSE ``event:``/``data:`` pairs of a streamed message, ending with ``message_stop``."""

    def event(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()

    start: dict[str, Any] = {
        "id": rid,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage(usage, output=1),
    }
    yield event("message_start", {"message": start})
    yield event("ping", {})
    index = 0

    def block_delta(delta: dict[str, Any]) -> bytes:
        return event("content_block_delta", {"index": index, "delta": delta})

    if turn.thinking:
        block: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
        yield event("content_block_start", {"index": index, "content_block": block})
        for piece in split(turn.thinking, chunk):
            yield block_delta({"type": "thinking_delta", "thinking": piece})
        yield block_delta({"type": "signature_delta", "signature": _signature(turn, rid)})
        yield event("content_block_stop", {"index": index})
        index += 1
    if turn.text:
        block = {"type": "text", "text": ""}
        yield event("content_block_start", {"index": index, "content_block": block})
        for piece in split(turn.text, chunk):
            yield block_delta({"type": "text_delta", "text": piece})
        yield event("content_block_stop", {"index": index})
        index += 1
    for call_id, call in zip(ids, turn.tool_calls, strict=True):
        block = {"type": "tool_use", "id": call_id, "name": call.name, "input": {}}
        yield event("content_block_start", {"index": index, "content_block": block})
        for piece in split(call.arguments_json(), chunk):
            yield block_delta({"type": "input_json_delta", "partial_json": piece})
        yield event("content_block_stop", {"index": index})
        index += 1
    yield event(
        "message_delta",
        {
            "delta": {"stop_reason": _stop_reason(turn), "stop_sequence": None},
            "usage": {"output_tokens": usage.output_tokens},
        },
    )
    yield event("message_stop", {})


def error_body(error: ScriptedError) -> Any:
    if error.body is not None:
        return error.body
    kind = {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        429: "rate_limit_error",
        529: "overloaded_error",
    }.get(error.status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": error.message}}
