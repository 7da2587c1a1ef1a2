"""Stream parsing: Anthropic Messages SSE events -> stream events and the final ``Response``.

Handles ``message_start``, ``content_block_start/delta/stop`` (``text_delta``,
``thinking_delta``, ``signature_delta``, ``input_json_delta``), ``message_delta`` with
cumulative usage, ``message_stop``, ``ping``, ``error`` events after a 200, unknown event
and block types (skipped), and a stream cut by ``max_tokens`` inside a tool input.
"""

from __future__ import annotations

import json
from typing import Any

from driveros._errors import StreamError
from driveros.llm._anthropic_response import parse_message, parse_usage
from driveros.llm._httperrors import error_from_event
from driveros.llm._sse import SSEvent
from driveros.llm._types import (
    Response,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UsageDelta,
)


class AnthropicStreamState:
    """One streamed message. ``feed`` per SSE event, then ``finish``."""

    def __init__(self, *, provider: str, model: str) -> None:
        self._provider = provider
        self._model = model
        self._message: dict[str, Any] = {}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self._usage: dict[str, Any] = {}
        self._stopped = False

    def feed(self, sse: SSEvent) -> list[StreamEvent]:
        if not sse.data.strip():
            return []
        try:
            event = json.loads(sse.data)
        except ValueError as exc:
            raise StreamError(
                f"{self._provider}: malformed stream event: {sse.data[:200]!r}",
                provider=self._provider,
            ) from exc
        if not isinstance(event, dict):
            return []
        kind = event.get("type") or sse.event
        if kind == "error" or sse.event == "error":
            raise error_from_event(self._provider, event)
        handler = _HANDLERS.get(kind)
        return handler(self, event) if handler else []

    def _start(self, event: dict[str, Any]) -> list[StreamEvent]:
        self._message = dict(event.get("message") or {})
        self._usage = dict(self._message.get("usage") or {})
        return [UsageDelta(usage=parse_usage(self._usage))] if self._usage else []

    def _block_start(self, event: dict[str, Any]) -> list[StreamEvent]:
        index = event.get("index", len(self._blocks))
        block = dict(event.get("content_block") or {})
        self._blocks[index] = block
        kind = block.get("type")
        if kind == "tool_use":
            self._json[index] = []
            return [ToolCallDelta(index=index, id=block.get("id"), name=block.get("name"))]
        if kind == "text" and block.get("text"):
            return [TextDelta(text=block["text"])]
        if kind == "thinking" and block.get("thinking"):
            return [ThinkingDelta(text=block["thinking"])]
        return []

    def _block_delta(self, event: dict[str, Any]) -> list[StreamEvent]:
        index = event.get("index", -1)
        block = self._blocks.get(index)
        delta = event.get("delta") or {}
        if block is None:
            return []
        match delta.get("type"):
            case "text_delta":
                text = str(delta.get("text") or "")
                block["text"] = str(block.get("text") or "") + text
                return [TextDelta(text=text)] if text else []
            case "thinking_delta":
                text = str(delta.get("thinking") or "")
                block["thinking"] = str(block.get("thinking") or "") + text
                return [ThinkingDelta(text=text)] if text else []
            case "signature_delta":
                block["signature"] = str(block.get("signature") or "") + str(
                    delta.get("signature") or ""
                )
                return [ThinkingDelta(signature=block["signature"])]
            case "input_json_delta":
                fragment = str(delta.get("partial_json") or "")
                self._json.setdefault(index, []).append(fragment)
                return [ToolCallDelta(index=index, arguments=fragment)] if fragment else []
            case _:
                return []

    def _block_stop(self, event: dict[str, Any]) -> list[StreamEvent]:
        self._close_block(event.get("index", -1))
        return []

    def _close_block(self, index: int) -> None:
        fragments = self._json.pop(index, None)
        block = self._blocks.get(index)
        if fragments is None or block is None:
            return
        text = "".join(fragments)
        if not text.strip():
            return  # no input deltas: keep the start block's input ({} for no arguments)
        try:
            block["input"] = json.loads(text)
        except ValueError:
            block["input"] = text  # unfinished JSON (max_tokens): kept raw, not a crash

    def _delta(self, event: dict[str, Any]) -> list[StreamEvent]:
        delta = event.get("delta") or {}
        for key in ("stop_reason", "stop_sequence", "stop_details"):
            if key in delta:
                self._message[key] = delta[key]
        usage = event.get("usage")
        if isinstance(usage, dict):
            # message_delta usage is cumulative: later values replace earlier ones.
            self._usage.update({k: v for k, v in usage.items() if v is not None})
            return [UsageDelta(usage=parse_usage(self._usage))]
        return []

    def _stop(self, event: dict[str, Any]) -> list[StreamEvent]:
        self._stopped = True
        return []

    def finish(self) -> Response:
        if not self._message:
            raise StreamError(
                f"{self._provider}: stream ended without a message",
                provider=self._provider,
                retryable=True,
            )
        if not self._stopped and not self._message.get("stop_reason"):
            raise StreamError(
                f"{self._provider}: stream ended before the message was complete",
                provider=self._provider,
                retryable=True,
            )
        for index in list(self._json):
            self._close_block(index)
        message = dict(self._message)
        message["content"] = [self._blocks[i] for i in sorted(self._blocks)]
        message["usage"] = self._usage
        return parse_message(message, provider=self._provider, model=self._model)


_HANDLERS = {
    "message_start": AnthropicStreamState._start,
    "content_block_start": AnthropicStreamState._block_start,
    "content_block_delta": AnthropicStreamState._block_delta,
    "content_block_stop": AnthropicStreamState._block_stop,
    "message_delta": AnthropicStreamState._delta,
    "message_stop": AnthropicStreamState._stop,
}
