"""Request mapping: driveros messages -> Chat Completions request body."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, assert_never

from driveros.llm._openai_response import MESSAGE_FIELDS
from driveros.llm._types import (
    Message,
    Request,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)

# o1, o3-mini, o4-mini, gpt-5, gpt-5.1-codex ... (optionally "openai/" prefixed on routers),
# but not the non-reasoning "gpt-5-chat" aliases.
_REASONING_MODEL = re.compile(r"^(?:[\w.-]+/)?(?:o\d|gpt-5)(?![\w.-]*-chat)", re.IGNORECASE)


def is_reasoning_model(model: str) -> bool:
    """Whether ``model`` is an OpenAI reasoning model (max_completion_tokens, effort)."""
    return bool(_REASONING_MODEL.match(model))


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between Chat Completions servers. One per preset."""

    #: Provider family name; thinking parts from this family are replayed to it.
    family: str
    #: Always send ``max_completion_tokens`` (OpenAI) instead of ``max_tokens``.
    max_completion_tokens: bool = False
    #: Use OpenRouter's ``reasoning`` object (and ``usage.include``) instead of
    #: ``reasoning_effort``.
    openrouter: bool = False
    #: Field under which replayed reasoning text goes on assistant messages (None: not sent).
    reasoning_field: str | None = "reasoning_content"
    #: Honour ``cache_control`` markers on content parts (OpenRouter routes to Anthropic).
    cache_control: bool = False


#: Anthropic (behind OpenRouter) accepts at most four cache breakpoints per request.
MAX_BREAKPOINTS = 4

_OPENAI_EFFORT = {
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
    "max": "xhigh",
}
_OPENROUTER_EFFORT = {
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "high",
    "max": "high",
}


def _content(parts: list[TextPart], *, cache: bool, ttl: str | None) -> str | list[dict[str, Any]]:
    if not cache:
        return "".join(p.text for p in parts)
    blocks: list[dict[str, Any]] = [{"type": "text", "text": p.text} for p in parts]
    marker: dict[str, Any] = {"type": "ephemeral"}
    if ttl:
        marker["ttl"] = ttl
    blocks[-1]["cache_control"] = marker
    return blocks


def _arguments_text(call: ToolCallPart) -> str:
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, separators=(",", ":"), ensure_ascii=False)


def _assistant(msg: Message, dialect: Dialect) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant"}
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    thinking: list[ThinkingPart] = []
    for part in msg.parts:
        match part:
            case TextPart():
                texts.append(part.text)
            case ToolCallPart():
                calls.append(
                    {
                        "id": part.id,
                        "type": "function",
                        "function": {"name": part.name, "arguments": _arguments_text(part)},
                    }
                )
            case ThinkingPart():
                if part.provider == dialect.family:
                    thinking.append(part)
            case ToolResultPart():
                pass  # results never belong to an assistant turn; ignored defensively
            case _:
                assert_never(part)
    out["content"] = "".join(texts) if texts or not calls else None
    if calls:
        out["tool_calls"] = calls
    details = [d for t in thinking for d in (t.details or ())]
    for detail in details:
        if detail.get("type") == MESSAGE_FIELDS and isinstance(detail.get("fields"), dict):
            out.update(detail["fields"])
    details = [d for d in details if d.get("type") != MESSAGE_FIELDS]
    if thinking and dialect.reasoning_field:
        text = "".join(t.text for t in thinking)
        if text:
            out[dialect.reasoning_field] = text
        if details and dialect.openrouter:
            out["reasoning_details"] = details
    return out


def map_messages(req: Request, dialect: Dialect) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    last_user = max((i for i, m in enumerate(req.messages) if m.role == "user"), default=-1)
    last = len(req.messages) - 1
    for index, msg in enumerate(req.messages):
        if msg.role == "assistant":
            out.append(_assistant(msg, dialect))
            continue
        texts = [p for p in msg.parts if isinstance(p, TextPart)]
        results = [p for p in msg.parts if isinstance(p, ToolResultPart)]
        for result in results:
            content: str | list[dict[str, Any]] = result.content
            if (
                dialect.cache_control
                and req.cache
                and index == last
                and not texts
                and result is results[-1]
            ):
                # The end of the conversation so far: the next turn reads up to here.
                content = _content([TextPart(text=result.content)], cache=True, ttl=req.cache_ttl)
            out.append({"role": "tool", "tool_call_id": result.tool_call_id, "content": content})
        if not texts:
            continue
        cache = dialect.cache_control and (
            any(p.cache for p in texts)
            or (req.cache and (msg.role == "system" or index in (last_user, last)))
        )
        role = "system" if msg.role == "system" else "user"
        out.append({"role": role, "content": _content(texts, cache=cache, ttl=req.cache_ttl)})
    _cap_breakpoints(out)
    return out


def _cap_breakpoints(messages: list[dict[str, Any]]) -> None:
    """At most :data:`MAX_BREAKPOINTS` ``cache_control`` markers: the latest ones win
    (they cover the longest prefix)."""
    marked = [
        block
        for message in messages
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if "cache_control" in block
    ]
    for block in marked[: max(0, len(marked) - MAX_BREAKPOINTS)]:
        del block["cache_control"]


def map_tool(tool: ToolSpec) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name, "parameters": tool.parameters}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}


def _tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in ("auto", "required", "none"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def build_body(req: Request, *, model: str, dialect: Dialect, stream: bool) -> dict[str, Any]:
    """The JSON body for ``POST /chat/completions``."""
    reasoning = is_reasoning_model(model)
    body: dict[str, Any] = {"model": model, "messages": map_messages(req, dialect)}
    if req.tools:
        body["tools"] = [map_tool(t) for t in req.tools]
        if req.tool_choice:
            body["tool_choice"] = _tool_choice(req.tool_choice)
    if req.max_tokens is not None:
        key = (
            "max_completion_tokens" if dialect.max_completion_tokens or reasoning else "max_tokens"
        )
        body[key] = req.max_tokens
    if req.temperature is not None and not reasoning:
        # Reasoning models reject sampling parameters; dropping beats a certain 400.
        body["temperature"] = req.temperature
    if req.stop:
        body["stop"] = list(req.stop)
    if dialect.openrouter:
        if req.thinking or req.effort or req.thinking_budget:
            spec: dict[str, Any] = {"enabled": True}
            if req.thinking_budget:
                spec["max_tokens"] = req.thinking_budget
            elif req.effort:
                spec["effort"] = _OPENROUTER_EFFORT[req.effort]
            body["reasoning"] = spec
        body["usage"] = {"include": True}
    elif req.effort:
        body["reasoning_effort"] = _OPENAI_EFFORT[req.effort]
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    body.update(req.extra)
    return body
