"""Response mapping: a Chat Completions response object -> driveros ``Response``.

The stream state machine (``_openai_stream``) rebuilds this same object from the deltas and
calls :func:`parse_completion`, so both paths agree by construction.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from driveros._errors import ProviderError
from driveros.llm._httperrors import error_from_event, error_from_status
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
    "stop": StopReason.END_TURN,
    "end_turn": StopReason.END_TURN,
    "eos": StopReason.END_TURN,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "length": StopReason.MAX_TOKENS,
    "max_tokens": StopReason.MAX_TOKENS,
    "content_filter": StopReason.CONTENT_FILTER,
    "refusal": StopReason.REFUSAL,
}


def parse_usage(raw: Any) -> Usage:
    """Chat Completions usage (plus OpenRouter ``cost`` and cache-write extensions)."""
    if not isinstance(raw, dict):
        return Usage()
    prompt = token_count(raw.get("prompt_tokens"))
    completion = token_count(raw.get("completion_tokens"))
    prompt_details = raw.get("prompt_tokens_details") or {}
    completion_details = raw.get("completion_tokens_details") or {}
    cost = raw.get("cost")
    return Usage(
        input_tokens=prompt,
        output_tokens=completion,
        total_tokens=token_count(raw.get("total_tokens")) or prompt + completion,
        cache_read_tokens=token_count(prompt_details.get("cached_tokens")),
        cache_write_tokens=token_count(prompt_details.get("cache_write_tokens")),
        reasoning_tokens=token_count(completion_details.get("reasoning_tokens")),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
    )


def usage_of(chunk: dict[str, Any]) -> dict[str, Any] | None:
    """The usage object of a response or chunk (Groq puts it under ``x_groq``)."""
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        return usage
    groq = chunk.get("x_groq")
    if isinstance(groq, dict) and isinstance(groq.get("usage"), dict):
        return dict(groq["usage"])
    return None


def map_stop(finish_reason: str | None, has_calls: bool) -> StopReason:
    # Some compatible servers end a tool call with "stop" or send no finish reason at all.
    if has_calls and finish_reason in (None, "stop", "tool_calls", "function_call"):
        return StopReason.TOOL_USE
    if finish_reason is None:
        return StopReason.END_TURN
    return _STOP.get(finish_reason, StopReason.OTHER)


def details_text(details: list[dict[str, Any]]) -> str:
    return "".join(
        str(d.get("text") or d.get("summary") or "")
        for d in details
        if d.get("type") != "reasoning.encrypted"
    )


def _signature(details: list[dict[str, Any]]) -> str | None:
    sigs = [d["signature"] for d in details if isinstance(d.get("signature"), str)]
    return sigs[-1] if sigs else None


def synth_call_id(index: int, name: str, arguments: str) -> str:
    """A stable id for servers that send an empty one (the same data gives the same id)."""
    digest = hashlib.sha256(f"{index}:{name}:{arguments}".encode()).hexdigest()[:12]
    return f"call_{index}_{digest}"


def raise_body_error(provider: str, data: dict[str, Any]) -> None:
    """A 200 body that carries an ``error`` object instead of choices (OpenRouter does)."""
    error = data.get("error")
    if not error or data.get("choices"):
        return
    code = error.get("code") if isinstance(error, dict) else None
    exc: ProviderError
    if isinstance(code, int) and code >= 400:
        exc = error_from_status(provider, code, {}, json.dumps(data))
    else:
        exc = error_from_event(provider, data)
    raise exc


#: Standard assistant-message fields; anything else non-null is a vendor extension (Gemini's
#: ``thought_signature`` / ``extra_content``) that is kept and replayed to the same family.
_KNOWN_FIELDS = frozenset(
    {
        "role",
        "content",
        "tool_calls",
        "reasoning",
        "reasoning_content",
        "reasoning_details",
        "refusal",
        "annotations",
        "audio",
        "function_call",
        "name",
    }
)
MESSAGE_FIELDS = "message_fields"


def _vendor_fields(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k not in _KNOWN_FIELDS and v is not None}


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def _tool_calls(raw: Any) -> list[ToolCallPart]:
    calls: list[ToolCallPart] = []
    for index, call in enumerate(raw or ()):
        function = call.get("function") or {}
        name = str(function.get("name") or "")
        args_raw = function.get("arguments")
        if isinstance(args_raw, dict):
            args_text: str | None = json.dumps(args_raw)
        else:
            args_text = args_raw if isinstance(args_raw, str) else None
        arguments, bad = parse_arguments(args_text)
        call_id = call.get("id") or synth_call_id(index, name, args_text or "")
        calls.append(
            ToolCallPart(id=str(call_id), name=name, arguments=arguments, raw_arguments=bad)
        )
    return calls


def parse_completion(data: dict[str, Any], *, provider: str, family: str, model: str) -> Response:
    """Map one ``chat.completion`` object (only the first choice is used)."""
    raise_body_error(provider, data)
    choices = data.get("choices") or [{}]
    choice = choices[0] or {}
    message = choice.get("message") or {}
    parts: list[Part] = []
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    details = [d for d in (message.get("reasoning_details") or ()) if isinstance(d, dict)]
    text = reasoning if isinstance(reasoning, str) else details_text(details)
    if text or details:
        parts.append(
            ThinkingPart(
                text=text,
                signature=_signature(details),
                provider=family,
                details=tuple(details) if details else None,
            )
        )
    vendor = _vendor_fields(message)
    if vendor:
        parts.append(
            ThinkingPart(provider=family, details=({"type": MESSAGE_FIELDS, "fields": vendor},))
        )
    content = _content_text(message.get("content"))
    if content:
        parts.append(TextPart(text=content))
    calls = _tool_calls(message.get("tool_calls"))
    parts.extend(calls)
    finish = choice.get("finish_reason")
    return Response(
        parts=tuple(parts),
        stop_reason=map_stop(finish, bool(calls)),
        raw_stop_reason=finish,
        usage=parse_usage(usage_of(data)),
        model=str(data.get("model") or model),
        provider=provider,
        id=data.get("id"),
    )
