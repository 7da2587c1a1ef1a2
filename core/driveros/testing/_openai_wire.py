"""OpenAI Chat Completions wire format for a scripted turn (JSON body and SSE chunks)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from driveros.testing._script import ScriptedError, Turn, TurnUsage

_FINISH = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


def split(text: str, size: int) -> list[str]:
    """Cut text into fragments of ``size`` characters (at least one fragment)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _finish_reason(turn: Turn) -> str:
    if turn.stop_reason is not None:
        return _FINISH.get(turn.stop_reason, turn.stop_reason)
    return "tool_calls" if turn.tool_calls else "stop"


def _usage(usage: TurnUsage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }


def completion(turn: Turn, *, ids: list[str], model: str, rid: str, usage: TurnUsage) -> Any:
    """The non-streaming ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.thinking:
        message["reasoning"] = turn.thinking
        message["reasoning_details"] = [
            {"type": "reasoning.text", "text": turn.thinking, "format": "unknown", "index": 0}
        ]
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json()},
            }
            for call_id, call in zip(ids, turn.tool_calls, strict=True)
        ]
    return {
        "id": rid,
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(turn)}],
        "usage": _usage(usage),
    }


def stream_chunks(
    turn: Turn,
    *,
    ids: list[str],
    model: str,
    rid: str,
    usage: TurnUsage,
    include_usage: bool,
    chunk: int,
) -> Iterator[bytes]:
    """SSE ``data:`` lines of a streamed completion, ending with ``data: [DONE]``."""

    def frame(choices: list[Any], **extra: Any) -> bytes:
        body = {
            "id": rid,
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "choices": choices,
            **extra,
        }
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    def delta(d: dict[str, Any], finish: str | None = None) -> bytes:
        return frame([{"index": 0, "delta": d, "finish_reason": finish}])

    yield delta({"role": "assistant", "content": ""})
    if turn.thinking:
        for piece in split(turn.thinking, chunk):
            detail = {"type": "reasoning.text", "text": piece, "format": "unknown", "index": 0}
            yield delta({"reasoning": piece, "reasoning_details": [detail]})
    if turn.text:
        for piece in split(turn.text, chunk):
            yield delta({"content": piece})
    for index, (call_id, call) in enumerate(zip(ids, turn.tool_calls, strict=True)):
        head = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        yield delta({"tool_calls": [head]})
        for piece in split(call.arguments_json(), chunk):
            yield delta({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield delta({}, _finish_reason(turn))
    if include_usage:
        yield frame([], usage=_usage(usage))
    yield b"data: [DONE]\n\n"


def error_body(error: ScriptedError) -> Any:
    if error.body is not None:
        return error.body
    kind = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(error.status, "server_error")
    return {"error": {"message": error.message, "type": kind, "param": None, "code": kind}}
