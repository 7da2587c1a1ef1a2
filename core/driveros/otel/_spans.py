"""A run's events as OpenTelemetry spans (GenAI semantic conventions).

One span per run (``invoke_agent driveros``), per model turn (``chat MODEL``) and per tool
call (``execute_tool NAME``), timed by the events' own timestamps; ``stuck``, ``compaction``
and ``approval`` become span events. The spans are built from the events after the run's
redactor masked them, and carry no prompt, answer, tool argument or output: only names,
counts, outcomes and costs (the GenAI conventions keep content opt-in).

The SDK is imported only here, and this module only when tracing is on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Span, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer, set_span_in_context

from driveros import __version__
from driveros.agent import Event, OnEvent
from driveros.otel._settings import traces_endpoint

log = logging.getLogger(__name__)

#: Outcomes a run span reports as an error.
_ERRORS = {"provider_error", "setup_error", "stuck", "resource_cap", "refused"}


def _ns(ts: float) -> int:
    return int(ts * 1_000_000_000)


def make_provider(
    environ: Mapping[str, str], exporter: SpanExporter | None = None
) -> TracerProvider:
    """A tracer provider exporting over OTLP/HTTP (protobuf) to the configured endpoint;
    ``OTEL_SERVICE_NAME`` names the service (default ``driveros``)."""
    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=traces_endpoint(environ))
    name = environ.get("OTEL_SERVICE_NAME", "").strip() or "driveros"
    provider = TracerProvider(
        resource=Resource.create({"service.name": name, "service.version": __version__})
    )
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


class RunSpans:
    """Turns one run's events into spans on ``tracer``."""

    def __init__(self, tracer: Tracer, *, provider: str = "", model: str = "") -> None:
        self.tracer = tracer
        self.provider = provider
        self.model = model
        self.run: Span | None = None
        self.turns: dict[int, Span] = {}
        self.tools: dict[str, Span] = {}

    def _start(self, name: str, ts: float, parent: Span | None, attrs: dict[str, Any]) -> Span:
        context = set_span_in_context(parent) if parent is not None else None
        span = self.tracer.start_span(
            name,
            context=context,
            kind=SpanKind.INTERNAL if parent is None else SpanKind.CLIENT,
            attributes={k: v for k, v in attrs.items() if v not in (None, "")},
            start_time=_ns(ts),
        )
        assert isinstance(span, Span)
        return span

    def _gen_ai(self, operation: str) -> dict[str, Any]:
        return {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": self.provider,
            "gen_ai.request.model": self.model,
        }

    def _event_on(self, turn: int | None, name: str, ts: float, attrs: dict[str, Any]) -> None:
        span = self.turns.get(turn) if turn is not None else None
        span = span or self.run
        if span is not None:
            span.add_event(name, {k: v for k, v in attrs.items() if v is not None}, _ns(ts))

    def observe(self, event: Event) -> None:
        data = event.model_dump()
        kind, ts = event.type, event.ts
        if kind == "run_started":
            self.provider = data.get("provider") or self.provider
            self.model = data.get("model") or self.model
            attrs = self._gen_ai("invoke_agent") | {
                "gen_ai.agent.name": "driveros",
                "driveros.run_id": event.run_id,
                "driveros.sandbox": data.get("sandbox", ""),
                "driveros.instructions": ", ".join(data.get("instructions", [])),
            }
            self.run = self._start("invoke_agent driveros", ts, None, attrs)
        elif kind == "turn_started":
            attrs = self._gen_ai("chat") | {"driveros.turn": data["turn"]}
            self.turns[data["turn"]] = self._start(f"chat {self.model}", ts, self.run, attrs)
        elif kind == "turn_finished":
            span = self.turns.pop(data["turn"], None)
            if span is not None:
                span.set_attributes(_usage(data["usage"]))
                span.end(_ns(ts))
        elif kind == "tool_call":
            parent = self.turns.get(data["turn"], self.run)
            attrs = self._gen_ai("execute_tool") | {
                "gen_ai.tool.name": data["name"],
                "gen_ai.tool.call.id": data["call_id"],
            }
            self.tools[data["call_id"]] = self._start(
                f"execute_tool {data['name']}", ts, parent, attrs
            )
        elif kind == "tool_result":
            span = self.tools.pop(data["call_id"], None)
            if span is not None:
                span.set_attribute("driveros.tool.ok", bool(data["ok"]))
                if not data["ok"]:
                    span.set_status(Status(StatusCode.ERROR))
                span.end(_ns(ts))
        elif kind == "approval":
            attrs = {
                "gen_ai.tool.name": data["name"],
                "gen_ai.tool.call.id": data["call_id"],
                "driveros.decision": data["decision"],
                "driveros.asked": data["asked"],
                "driveros.answered_by": data.get("answered_by"),
            }
            self._event_on(data["turn"], "driveros.approval", ts, attrs)
        elif kind == "stuck":
            attrs = {"driveros.detector": data["detector"]}
            self._event_on(data["turn"], "driveros.stuck", ts, attrs)
        elif kind == "compaction":
            attrs = {
                "driveros.method": data["method"],
                "driveros.tokens_before": data["tokens_before"],
                "driveros.tokens_after": data["tokens_after"],
            }
            self._event_on(None, "driveros.compaction", ts, attrs)
        elif kind == "result":
            self._finish(data, ts)

    def _finish(self, data: dict[str, Any], ts: float) -> None:
        for span in [*self.tools.values(), *self.turns.values()]:
            span.set_status(Status(StatusCode.ERROR, "the run ended first"))
            span.end(_ns(ts))
        self.tools.clear()
        self.turns.clear()
        if self.run is None:  # a run that failed before it started
            self.run = self._start("invoke_agent driveros", ts, None, self._gen_ai("invoke_agent"))
        self.run.set_attributes(
            _usage(data["usage"])
            | {
                "driveros.outcome": data["outcome"],
                "driveros.exit_code": data["exit_code"],
                "driveros.verified": data["verified"],
                "driveros.turns": data["turns"],
            }
        )
        if data["outcome"] in _ERRORS:
            self.run.set_status(Status(StatusCode.ERROR, data["outcome"]))
        self.run.end(_ns(ts))


def _usage(usage: dict[str, Any]) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "gen_ai.usage.input_tokens": usage.get("input_tokens", 0),
        "gen_ai.usage.output_tokens": usage.get("output_tokens", 0),
    }
    if usage.get("cost_usd") is not None:
        attrs["driveros.cost_usd"] = float(usage["cost_usd"])
    return attrs


_providers: dict[tuple[str, str], TracerProvider] = {}


def process_provider(environ: Mapping[str, str]) -> TracerProvider:
    """The process's tracer provider for the configured endpoint and service (made on first
    use, then shared by every run; never installed as the global one)."""
    key = (traces_endpoint(environ), environ.get("OTEL_SERVICE_NAME", ""))
    if key not in _providers:
        _providers[key] = make_provider(environ)
    return _providers[key]


def traced(on_event: OnEvent, provider: TracerProvider) -> OnEvent:
    """``on_event`` that also records the run's spans; the run's ``result`` flushes them."""
    spans = RunSpans(provider.get_tracer("driveros", __version__))

    async def watch(event: Event) -> None:
        try:
            spans.observe(event)
        except Exception as exc:  # tracing never breaks a run
            log.warning("opentelemetry: %s", exc)
        await on_event(event)
        if event.type == "result":
            await asyncio.to_thread(provider.force_flush, 10_000)

    return watch
