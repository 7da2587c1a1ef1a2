"""Request mapping: driveros messages -> Anthropic Messages API request body."""

from __future__ import annotations

import re
from typing import Any, assert_never

from driveros.llm._types import (
    Message,
    Request,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)

FAMILY = "anthropic"
#: Anthropic accepts at most four cache breakpoints per request.
MAX_BREAKPOINTS = 4
DEFAULT_MAX_TOKENS = 4096
DEFAULT_THINKING_BUDGET = 4096

_VERSION = re.compile(r"claude-(?:opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?!\d)")


def supports_adaptive_thinking(model: str) -> bool:
    """Adaptive thinking (no budget) exists from the 4.6 generation on."""
    match = _VERSION.search(model)
    if not match:
        return False
    major, minor = int(match.group(1)), int(match.group(2) or 0)
    return (major, minor) >= (4, 6)


def _marker(req: Request) -> dict[str, Any]:
    marker: dict[str, Any] = {"type": "ephemeral"}
    if req.cache_ttl:
        marker["ttl"] = req.cache_ttl
    return marker


def _assistant_blocks(msg: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in msg.parts:
        match part:
            case ThinkingPart():
                # Only Anthropic's own signed (or redacted) thinking may be replayed, and
                # it must go back byte for byte, in order.
                if part.provider not in (FAMILY, None):
                    continue
                if part.redacted is not None:
                    blocks.append({"type": "redacted_thinking", "data": part.redacted})
                elif part.signature:
                    blocks.append(
                        {"type": "thinking", "thinking": part.text, "signature": part.signature}
                    )
            case TextPart():
                if part.text:
                    blocks.append(_text(part))
            case ToolCallPart():
                blocks.append(
                    {"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments}
                )
            case ToolResultPart():
                pass  # a result never belongs to an assistant turn
            case _:
                assert_never(part)
    return blocks


def _text(part: TextPart) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": part.text}
    if part.cache:
        block["cache_control"] = True  # placeholder, resolved by _place_breakpoints
    return block


def _user_blocks(msg: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in msg.parts:
        if isinstance(part, ToolResultPart):
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": part.tool_call_id,
                "content": part.content,
            }
            if part.is_error:
                result["is_error"] = True
            blocks.append(result)
        elif isinstance(part, TextPart) and part.text:
            blocks.append(_text(part))
    return blocks


def map_messages(req: Request) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(system_blocks, messages)``; consecutive same-role turns are merged."""
    system: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    for msg in req.messages:
        if msg.role == "system":
            system.extend(_text(p) for p in msg.parts if isinstance(p, TextPart) and p.text)
            continue
        role = "assistant" if msg.role == "assistant" else "user"
        blocks = _assistant_blocks(msg) if role == "assistant" else _user_blocks(msg)
        if not blocks:
            continue
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
    return system, messages


def _place_breakpoints(
    req: Request,
    system: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    messages: list[dict[str, Any]],
) -> None:
    """Resolve cache markers: explicit part markers plus, with ``req.cache``, the end of
    the tools, the system prompt and the whole conversation prefix (at most four, the
    latest ones win because they cover the longest prefix)."""
    if req.cache:
        if tools:
            tools[-1]["cache_control"] = True
        if system:
            system[-1]["cache_control"] = True
        if messages and messages[-1]["content"]:
            messages[-1]["content"][-1]["cache_control"] = True
    ordered = tools + system + [b for m in messages for b in m["content"]]
    marked = [b for b in ordered if b.get("cache_control") is True]
    for block in marked[: max(0, len(marked) - MAX_BREAKPOINTS)]:
        del block["cache_control"]
    for block in marked[-MAX_BREAKPOINTS:]:
        block["cache_control"] = _marker(req)


def map_tool(tool: ToolSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name, "input_schema": tool.parameters}
    if tool.description:
        out["description"] = tool.description
    return out


def _tool_choice(choice: str) -> dict[str, Any]:
    if choice == "auto":
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    return {"type": "tool", "name": choice}


def build_body(req: Request, *, model: str, stream: bool) -> dict[str, Any]:
    """The JSON body for ``POST /v1/messages``."""
    system, messages = map_messages(req)
    tools = [map_tool(t) for t in req.tools]
    _place_breakpoints(req, system, tools, messages)
    thinking = req.thinking or req.thinking_budget is not None
    max_tokens = req.max_tokens
    body: dict[str, Any] = {"model": model, "messages": messages}
    if system:
        body["system"] = system
    if tools:
        body["tools"] = tools
        if req.tool_choice:
            body["tool_choice"] = _tool_choice(req.tool_choice)
    if thinking:
        if req.thinking_budget is None and supports_adaptive_thinking(model):
            body["thinking"] = {"type": "adaptive"}
        else:
            budget = req.thinking_budget or DEFAULT_THINKING_BUDGET
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            # The budget counts inside max_tokens: keep room for the answer itself.
            if max_tokens is None or max_tokens <= budget:
                max_tokens = budget + (max_tokens or DEFAULT_MAX_TOKENS)
    body["max_tokens"] = max_tokens or DEFAULT_MAX_TOKENS
    if req.effort:
        body["output_config"] = {"effort": req.effort}
    if req.temperature is not None and not thinking:
        # Extended thinking only runs at the default temperature.
        body["temperature"] = req.temperature
    if req.stop:
        body["stop_sequences"] = list(req.stop)
    if stream:
        body["stream"] = True
    body.update(req.extra)
    return body
