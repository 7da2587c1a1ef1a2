"""Stream parsing: Chat Completions SSE chunks -> stream events and the final ``Response``.

Tolerates what real servers send: tool-call ids and names repeated on later chunks,
arguments ``null``, missing or sent whole (even twice), usage on a chunk that still has
choices (or under Groq's ``x_groq``), no ``finish_reason`` for tool calls, comment lines,
``event: error`` frames and ``error`` objects inside a 200 stream.
"""

from __future__ import annotations

import json
from typing import Any

from driveros._errors import StreamError
from driveros.llm._httperrors import error_from_event
from driveros.llm._openai_response import (
    details_text,
    parse_completion,
    parse_usage,
    usage_of,
)
from driveros.llm._sse import SSEvent
from driveros.llm._types import (
    Response,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UsageDelta,
)

_CONCAT_DETAIL_KEYS = ("text", "summary", "data")


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


class _Call:
    __slots__ = ("arguments", "id", "name")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments = ""


class OpenAIStreamState:
    """One streamed completion. ``feed`` per SSE event, then ``finish``."""

    def __init__(self, *, provider: str, family: str, model: str) -> None:
        self._provider = provider
        self._family = family
        self._model = model
        self._id: str | None = None
        self._model_seen: str | None = None
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._details: dict[int, dict[str, Any]] = {}
        self._calls: dict[int, _Call] = {}
        self._finish: str | None = None
        self._usage: dict[str, Any] | None = None
        self._done = False

    def feed(self, sse: SSEvent) -> list[StreamEvent]:
        data = sse.data.strip()
        if data == "[DONE]":
            self._done = True
            return []
        if not data:
            return []
        try:
            chunk = json.loads(data)
        except ValueError as exc:
            if sse.event == "error":
                raise error_from_event(self._provider, data) from exc
            raise StreamError(
                f"{self._provider}: malformed stream chunk: {data[:200]!r}", provider=self._provider
            ) from exc
        if not isinstance(chunk, dict):
            raise StreamError(
                f"{self._provider}: unexpected chunk {data[:200]!r}", provider=self._provider
            )
        if sse.event == "error" or chunk.get("error"):
            raise error_from_event(self._provider, chunk)
        self._id = self._id or chunk.get("id")
        self._model_seen = self._model_seen or chunk.get("model")
        events: list[StreamEvent] = []
        for choice in chunk.get("choices") or ():
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self._choice(choice, events)
        usage = usage_of(chunk)
        if usage is not None:
            self._usage = usage
            events.append(UsageDelta(usage=parse_usage(usage)))
        return events

    def _choice(self, choice: dict[str, Any], events: list[StreamEvent]) -> None:
        delta = choice.get("delta") or {}
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        details = [d for d in (delta.get("reasoning_details") or ()) if isinstance(d, dict)]
        if isinstance(reasoning, str) and reasoning:
            self._reasoning.append(reasoning)
            events.append(ThinkingDelta(text=reasoning))
        elif details and (text := details_text(details)):
            events.append(ThinkingDelta(text=text))
        for position, detail in enumerate(details):
            self._merge_detail(detail, position)
            if isinstance(detail.get("signature"), str) and detail["signature"]:
                events.append(ThinkingDelta(signature=detail["signature"]))
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._content.append(content)
            events.append(TextDelta(text=content))
        for position, raw in enumerate(delta.get("tool_calls") or ()):
            if isinstance(raw, dict):
                self._tool_delta(raw, position, events)
        if choice.get("finish_reason"):
            self._finish = choice["finish_reason"]

    def _merge_detail(self, detail: dict[str, Any], position: int) -> None:
        index = detail.get("index", position)
        index = index if isinstance(index, int) else position
        merged = self._details.get(index)
        if merged is None:
            self._details[index] = dict(detail)
            return
        for key, value in detail.items():
            if key in _CONCAT_DETAIL_KEYS and isinstance(value, str):
                merged[key] = (merged.get(key) or "") + value
            elif value is not None and (key == "signature" or merged.get(key) is None):
                merged[key] = value

    def _tool_delta(self, raw: dict[str, Any], position: int, events: list[StreamEvent]) -> None:
        index = raw.get("index", position)
        index = index if isinstance(index, int) else position
        call = self._calls.setdefault(index, _Call())
        new_id = new_name = None
        if raw.get("id") and not call.id:
            call.id = new_id = str(raw["id"])
        function = raw.get("function") or {}
        if function.get("name") and not call.name:
            call.name = new_name = str(function["name"])
        args = function.get("arguments")
        if isinstance(args, dict):
            args = json.dumps(args)
        fragment = args if isinstance(args, str) else ""
        if fragment and call.arguments and _is_json_object(call.arguments):
            # The call is already complete: a whole object sent again replaces it.
            if _is_json_object(fragment):
                call.arguments = fragment
            fragment = ""
        call.arguments += fragment
        if new_id or new_name or fragment:
            events.append(ToolCallDelta(index=index, id=new_id, name=new_name, arguments=fragment))

    def finish(self) -> Response:
        if not self._done and self._finish is None:
            raise StreamError(
                f"{self._provider}: stream ended before the response was complete",
                provider=self._provider,
                retryable=True,
            )
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self._content) or None}
        if self._reasoning:
            message["reasoning_content"] = "".join(self._reasoning)
        if self._details:
            message["reasoning_details"] = [self._details[i] for i in sorted(self._details)]
        if self._calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for _, call in sorted(self._calls.items())
            ]
        data: dict[str, Any] = {
            "id": self._id,
            "model": self._model_seen or self._model,
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish}],
        }
        if self._usage is not None:
            data["usage"] = self._usage
        return parse_completion(
            data, provider=self._provider, family=self._family, model=self._model
        )
