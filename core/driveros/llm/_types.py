"""Typed messages, requests, responses and stream events shared by every provider.

Messages are lists of parts discriminated on ``kind``. Provider adapters map these to and
from their wire formats; nothing here knows about HTTP.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --------------------------------------------------------------------------- parts


class TextPart(_Frozen):
    kind: Literal["text"] = "text"
    text: str
    #: Prompt caching hint: cache the conversation prefix up to and including this part.
    cache: bool = False


class ThinkingPart(_Frozen):
    """Model reasoning. Replayed unmodified on later turns for providers that need it.

    ``signature`` is Anthropic's thinking signature; ``redacted`` holds Anthropic's opaque
    ``redacted_thinking`` data (then ``text`` is empty); ``details`` holds provider-native
    reasoning records such as OpenRouter's ``reasoning_details``; ``provider`` names who
    produced it so a part is only replayed to the same family.
    """

    kind: Literal["thinking"] = "thinking"
    text: str = ""
    signature: str | None = None
    redacted: str | None = None
    provider: str | None = None
    details: tuple[dict[str, Any], ...] | None = None


class ToolCallPart(_Frozen):
    kind: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    #: The raw argument text when it did not parse as a JSON object (kept for the error path).
    raw_arguments: str | None = None


class ToolResultPart(_Frozen):
    kind: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    name: str = ""
    content: str
    is_error: bool = False


Part = Annotated[
    TextPart | ThinkingPart | ToolCallPart | ToolResultPart, Field(discriminator="kind")
]

Role = Literal["system", "user", "assistant", "tool"]


class Message(_Frozen):
    """One conversation message. Tool results travel in ``role="tool"`` messages."""

    role: Role
    parts: tuple[Part, ...]

    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))


def system(text: str, *, cache: bool = False) -> Message:
    return Message(role="system", parts=(TextPart(text=text, cache=cache),))


def user(text: str, *, cache: bool = False) -> Message:
    return Message(role="user", parts=(TextPart(text=text, cache=cache),))


def assistant(text: str) -> Message:
    return Message(role="assistant", parts=(TextPart(text=text),))


def tool_results(*results: ToolResultPart) -> Message:
    return Message(role="tool", parts=tuple(results))


# --------------------------------------------------------------------------- request


class ToolSpec(_Frozen):
    """A tool as the model sees it: a name, a description and a JSON Schema for arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


Effort = Literal["low", "medium", "high", "xhigh", "max"]


class Request(_Frozen):
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    #: "auto" (default), "required", "none", or a tool name.
    tool_choice: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    stop: tuple[str, ...] = ()
    #: One cross-provider reasoning-effort knob, mapped per provider.
    effort: Effort | None = None
    #: Ask for extended thinking (Anthropic budget / OpenRouter reasoning) when supported.
    thinking: bool = False
    thinking_budget: int | None = None
    #: Mark system, tools and the conversation prefix for prompt caching where supported.
    cache: bool = False
    cache_ttl: Literal["5m", "1h"] | None = None
    #: Override the provider's default model for this request.
    model: str | None = None
    #: Provider-specific extra body fields, merged last (e.g. OpenRouter ``provider`` routing).
    extra: dict[str, Any] = Field(default_factory=dict)

    def __init__(self, **data: Any) -> None:
        for key in ("messages", "tools", "stop"):
            if key in data and isinstance(data[key], list):
                data[key] = tuple(data[key])
        super().__init__(**data)


# --------------------------------------------------------------------------- response


class StopReason(StrEnum):
    END_TURN = "end_turn"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    STOP_SEQUENCE = "stop_sequence"
    REFUSAL = "refusal"
    CONTENT_FILTER = "content_filter"
    PAUSE = "pause"
    OTHER = "other"


class Usage(_Frozen):
    """Token accounting. ``input_tokens`` counts every prompt token, cached or not.

    ``cost_usd`` is what the tokens cost in US dollars (``driveros.llm.price_usage``), or
    None when nothing was priced yet. ``cost_unknown`` says a price could not be found for
    some of these tokens (an unknown model): then ``cost_usd`` is None, never 0.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float | None = None
    cost_unknown: bool = False

    @model_validator(mode="before")
    @classmethod
    def _drop_derived(cls, data: Any) -> Any:
        # ``uncached_input_tokens`` is serialized for readers but always derived, never read.
        if isinstance(data, dict) and "uncached_input_tokens" in data:
            data = {k: v for k, v in data.items() if k != "uncached_input_tokens"}
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def uncached_input_tokens(self) -> int:
        """Prompt tokens neither read from nor written to the provider's cache."""
        return max(self.input_tokens - self.cache_read_tokens - self.cache_write_tokens, 0)

    def __add__(self, other: Usage) -> Usage:
        unknown = self.cost_unknown or other.cost_unknown
        cost: float | None
        if unknown or (self.cost_usd is None and other.cost_usd is None):
            cost = None
        else:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cost_usd=cost,
            cost_unknown=unknown,
        )


class Response(_Frozen):
    parts: tuple[Part, ...] = ()
    stop_reason: StopReason = StopReason.END_TURN
    #: The provider's own stop/finish reason string, unmapped.
    raw_stop_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    provider: str = ""
    id: str | None = None

    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def thinking(self) -> list[ThinkingPart]:
        return [p for p in self.parts if isinstance(p, ThinkingPart)]

    def message(self) -> Message:
        """The assistant message to append to the history for the next turn."""
        return Message(role="assistant", parts=self.parts)


# --------------------------------------------------------------------------- stream events


class TextDelta(_Frozen):
    kind: Literal["text_delta"] = "text_delta"
    text: str


class ThinkingDelta(_Frozen):
    kind: Literal["thinking_delta"] = "thinking_delta"
    text: str = ""
    signature: str | None = None


class ToolCallDelta(_Frozen):
    """A fragment of a tool call; ``index`` identifies the call within the response."""

    kind: Literal["tool_call_delta"] = "tool_call_delta"
    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


class UsageDelta(_Frozen):
    kind: Literal["usage"] = "usage"
    usage: Usage


class StreamDone(_Frozen):
    """Always the last stream event; ``response`` equals what ``generate()`` returns."""

    kind: Literal["done"] = "done"
    response: Response


StreamEvent = Annotated[
    TextDelta | ThinkingDelta | ToolCallDelta | UsageDelta | StreamDone,
    Field(discriminator="kind"),
]


def parse_arguments(raw: str | None) -> tuple[dict[str, Any], str | None]:
    """Parse tool-call argument text; returns ``(arguments, raw_if_unparseable)``.

    Empty or null arguments mean "no arguments". Text that is not a JSON object is kept raw
    so the tool layer can hand the model a readable error instead of crashing.
    """
    if raw is None or raw.strip() in ("", "null"):
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError:
        return {}, raw
    if isinstance(value, dict):
        return value, None
    return {}, raw


def token_count(value: Any) -> int:
    """A token count read from a provider's usage object: a number, else 0."""
    return int(value) if isinstance(value, int | float) else 0
