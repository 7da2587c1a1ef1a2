"""Keeping a run's next request within its context budget: the budget from the model's window,
a summary of the older turns past the compaction point, old tool outputs trimmed when no
summary could be had, and ``resource_cap`` only when nothing made the request fit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from driveros._errors import ProviderError
from driveros.agent import _events as ev
from driveros.agent._context import (
    SUMMARY_REQUEST,
    ContextMeter,
    compacted,
    compaction_cut,
    trim_tool_outputs,
)
from driveros.agent._sink import EventSink
from driveros.agent._state import (
    ANSWER_RESERVE,
    DEFAULT_CONTEXT_BUDGET,
    AgentConfig,
    Finish,
    LoopState,
)
from driveros.llm import (
    Provider,
    Request,
    ToolSpec,
    Usage,
    context_window,
    price_usage,
    system,
    user,
)


async def context_budget(config: AgentConfig, provider: Provider) -> int:
    """``--max-context`` when given, else the model's window less room for the answer."""
    if config.context_budget is not None:
        return config.context_budget
    window = await context_window(provider.model, provider.name)
    if window is None:
        return DEFAULT_CONTEXT_BUDGET
    # Room for the answer: max_tokens (or 8192), at most a quarter of a small window.
    reserve = min(config.max_tokens or ANSWER_RESERVE, window // 4)
    return max(window - reserve, 1000)


@dataclass(frozen=True)
class Summarizer:
    """The run's model and tools, asked for a summary of the run so far (no tool call)."""

    provider: Provider
    tools: tuple[ToolSpec, ...]

    async def summarize(
        self, state: LoopState, config: AgentConfig, sink: EventSink
    ) -> tuple[str, Usage, str | None]:
        """(summary, usage, why there is none)."""
        request = Request(
            messages=(system(config.system_prompt), *state.history, user(SUMMARY_REQUEST)),
            tools=self.tools,
            tool_choice="none",
            max_tokens=config.max_tokens,
            cache=config.prompt_cache,
        )
        try:
            response = await self.provider.generate(request)
        except ProviderError as exc:
            return "", Usage(), f"the summary request failed: {exc}"
        usage = await price_usage(
            response.usage,
            model=self.provider.model or response.model,
            provider=self.provider.name,
        )
        summary = sink.redactor.text(response.text().strip())
        if not summary:
            return "", usage, "the model returned no summary"
        return summary, usage, None


async def fit_context(
    state: LoopState,
    *,
    budget: int,
    config: AgentConfig,
    meter: ContextMeter,
    model: Summarizer,
    sink: EventSink,
) -> None:
    """Past ``compact_at`` of the budget: summarize the older turns (the recent ones stay
    verbatim); trim old tool outputs only when no summary could be had; end the run
    ``resource_cap`` only when the request still does not fit the budget."""
    target = int(budget * config.compact_at)
    before = meter.estimate(state.history)
    if before <= target:
        return
    method: Literal["summary", "trim"] = "trim"
    error: str | None = None
    usage = Usage()
    cut = compaction_cut(state.history, config.keep_turns)
    if not config.compaction:
        error = "compaction is off"
    elif cut is None:
        error = "no turns old enough to summarize"
    elif state.summary_failures >= 2:
        error = "the model failed to summarize twice"
    else:
        summary, usage, error = await model.summarize(state, config, sink)
        state.usage = state.usage + usage
        if summary:
            state.history[:] = compacted(state.history, cut, summary)
            method = "summary"
        else:
            state.summary_failures += 1
    after = meter.estimate(state.history)
    # Down to the compaction point (so the next turn does not compact again); with
    # compaction off, only as far as the request must to fit.
    limit = target if config.compaction else budget
    if after > limit:
        after = trim_tool_outputs(state.history, budget=limit, meter=meter)
    if after < before:
        await sink.emit(
            ev.Compaction,
            turn=state.turns + 1,
            method=method,
            tokens_before=before,
            tokens_after=after,
            budget=budget,
            kept_messages=len(state.history),
            usage=usage,
            error=error,
        )
    if after > budget:
        raise Finish("resource_cap", error=f"context budget of about {budget} tokens exceeded")
