"""The agent loop: think (stream the model with tools) → act (sandbox) → observe, repeated.

A run ends when the model answers without a tool call, a budget is spent, a stuck detector
fires, the approval policy keeps refusing, the provider fails, or the task is canceled. It
always produces exactly one ``result`` (emitted last unless the caller defers it).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Sequence

from driveros._errors import ConfigError, ProviderError
from driveros._tool_names import EDIT_TOOLS, READ_ONLY_TOOLS
from driveros.agent import _events as ev
from driveros.agent import _memory
from driveros.agent._approval import ApprovalPolicy, ApprovalRequest, Tier, approval_policy
from driveros.agent._context import (
    ContextMeter,
)
from driveros.agent._diagnostics import DiagnosticsTracker
from driveros.agent._fitting import Summarizer, context_budget, fit_context
from driveros.agent._hooks import (
    ToolObservation,
    TurnObservation,
)
from driveros.agent._prompt import first_message
from driveros.agent._redact import Redactor
from driveros.agent._sink import EventSink, OnEvent
from driveros.agent._state import (
    DEFAULT_CONTEXT_BUDGET,
    AgentConfig,
    AgentRun,
    Finish,
    LoopState,
    result_fields,
)
from driveros.agent._stuck import default_detectors
from driveros.agent._think import stream_turn
from driveros.agent._tools import ToolBox, tool_specs
from driveros.agent._wiring import AgentWiring
from driveros.diagnostics import DiagnosticsSnapshot, render_delta, targets_fixed
from driveros.llm import (
    Message,
    Provider,
    Request,
    Response,
    StopReason,
    ToolCallPart,
    ToolResultPart,
    Usage,
    price_usage,
    system,
    tool_results,
    user,
)
from driveros.sandbox import Sandbox
from driveros.semantic import SemanticTools

log = logging.getLogger(__name__)


class Agent:
    """One agent over one provider and one sandbox. ``run()`` may be called once per task."""

    def __init__(
        self,
        provider: Provider,
        sandbox: Sandbox,
        *,
        config: AgentConfig | None = None,
        approval: ApprovalPolicy | None = None,
        on_event: OnEvent | None = None,
        wiring: AgentWiring | None = None,
    ) -> None:
        w = wiring or AgentWiring()
        detectors, extra_tools, diagnostics = w.detectors, w.extra_tools, w.diagnostics
        checkpoint = w.checkpoint
        self.provider = provider
        #: Records the scratch copy after a turn that ran tools (a review run's checkpoints).
        self._checkpoint = checkpoint
        self.checkpoints: list[ev.CheckpointInfo] = []
        self.sandbox = sandbox
        self.config = config or AgentConfig()
        self.approval = approval or approval_policy("policy", workspace=sandbox.workspace)
        self.detectors = [
            *(default_detectors() if detectors is None else detectors),
            *w.extra_detectors,
        ]
        self.memory = w.memory
        self.targets = list(w.targets)
        self._judge = w.targets_judge or targets_fixed
        self.sink = w.sink or EventSink(
            w.run_id or uuid.uuid4().hex[:12], on_event, Redactor(w.secrets)
        )
        #: The result a canceled run ended with (set before the cancellation propagates).
        self.partial_result: ev.Result | None = None
        self._tracker = DiagnosticsTracker(diagnostics) if diagnostics is not None else None
        self._tools = tool_specs(extra_tools)
        self._external = {t.spec.name: t.external for t in extra_tools if t.external is not None}
        self._meter = ContextMeter(self._tools, self.config.system_prompt)
        #: Estimated prompt tokens a request may carry (resolved when the run starts).
        self.context_budget = self.config.context_budget or DEFAULT_CONTEXT_BUDGET
        self._toolbox = ToolBox(
            sandbox,
            diagnostics=self._tracker.current if self._tracker else None,
            output_limit=self.config.output_limit,
            default_timeout=self.config.tool_timeout_s,
            extra=extra_tools,
            before_file=w.before_file,
            ready=w.tools_ready,
        )

    @property
    def run_id(self) -> str:
        return self.sink.run_id

    @property
    def semantic(self) -> SemanticTools:
        """The run's language servers (started by the semantic tools' first call)."""
        return self._toolbox.semantic

    # ------------------------------------------------------------------ run

    async def run(
        self, task: str, *, history: Sequence[Message] | None = None, emit_result: bool = True
    ) -> AgentRun:
        """Run the task to an outcome. Cancelling the calling task emits a ``canceled``
        result (when ``emit_result``) and re-raises."""
        state = LoopState(history=list(history or ()))
        await self.sink.emit(
            ev.RunStarted,
            task=task,
            provider=self.provider.name,
            model=self.provider.model,
            workspace=str(self.sandbox.workspace),
            sandbox=self.sandbox.tier,
        )
        timeout = asyncio.timeout(self.config.max_wall_s)
        try:
            async with timeout:
                finish = await self._loop(task, state)
        except Finish as exc:
            finish = exc
        except TimeoutError:
            if not timeout.expired():
                raise
            limit = f"{self.config.max_wall_s:g}s"
            finish = Finish("resource_cap", error=f"wall-clock limit of {limit} reached")
        except ProviderError as exc:
            finish = Finish("provider_error", error=str(exc))
        except ConfigError as exc:
            finish = Finish("setup_error", error=str(exc))
        except asyncio.CancelledError:
            result = self._result(Finish("canceled", error="canceled"), state)
            self.partial_result = result
            if emit_result:
                await self.sink.emit(ev.Result, **result_fields(result))
            raise
        result = self._result(finish, state)
        if emit_result:
            result = await self.sink.emit(ev.Result, **result_fields(result))
        return AgentRun(result=result, history=state.history)

    def _result(self, finish: Finish, state: LoopState) -> ev.Result:
        verified = state.observed and finish.outcome in ("answered", "unverified")
        return ev.Result(
            run_id=self.run_id,
            outcome=finish.outcome,
            exit_code=ev.EXIT_CODES[finish.outcome],
            answer=self.sink.redactor.text(finish.answer),
            verified=verified,
            turns=state.turns,
            usage=state.usage,
            duration_ms=(time.perf_counter() - state.started) * 1000,
            error=self.sink.redactor.text(finish.error) if finish.error else None,
            targets_fixed=finish.targets_fixed,
            stuck_detector=finish.detector,
            checkpoints=list(self.checkpoints),
        )

    async def _loop(self, task: str, state: LoopState) -> Finish:
        self.context_budget = await context_budget(self.config, self.provider)
        memories = await self._recall(task)
        state.history.append(user(first_message(task, memories=memories, targets=self.targets)))
        while True:
            if state.turns >= self.config.max_iterations:
                limit = self.config.max_iterations
                return Finish("resource_cap", error=f"iteration limit of {limit} reached")
            await fit_context(
                state,
                budget=self.context_budget,
                config=self.config,
                meter=self._meter,
                model=Summarizer(self.provider, self._tools),
                sink=self.sink,
            )
            self._check_cost(state)
            state.turns += 1
            turn = state.turns
            await self.sink.emit(ev.TurnStarted, turn=turn)
            started = time.perf_counter()
            response = await self._think(turn, state)
            state.history.append(response.message())
            state.usage = state.usage + response.usage
            state.last_turn = response.usage
            calls = response.tool_calls
            if not calls:
                await self._turn_finished(turn, started, response.usage)
                if response.stop_reason is StopReason.REFUSAL:
                    return Finish("refused", answer=response.text(), error="the model refused")
                return await self._answer(task, response.text(), state)
            observation = await self._act(turn, response, calls, state)
            await self._turn_finished(turn, started, response.usage)
            await self._record_checkpoint(turn, [c.name for c in calls])
            if state.blocked_streak >= self.config.refusal_turns:
                return Finish(
                    "refused",
                    answer=response.text(),
                    error="the model kept asking for actions the approval policy blocks",
                )
            verdicts = [d.observe(observation) for d in self.detectors]
            verdict = next((v for v in verdicts if v is not None), None)
            if verdict is not None:
                await self.sink.emit(
                    ev.Stuck,
                    turn=turn,
                    detector=verdict.detector,
                    detail=verdict.detail,
                    evidence=list(verdict.evidence),
                )
                return Finish("stuck", error=verdict.detail, detector=verdict.detector)

    async def _turn_finished(self, turn: int, started: float, usage: Usage) -> None:
        duration = (time.perf_counter() - started) * 1000
        await self.sink.emit(ev.TurnFinished, turn=turn, duration_ms=duration, usage=usage)

    async def _record_checkpoint(self, turn: int, tools: list[str]) -> None:
        if self._checkpoint is None:
            return
        cp = await self._checkpoint(turn, tools)
        if cp is not None:
            self.checkpoints.append(cp)
            await self.sink.emit(ev.Checkpoint, **cp.model_dump())

    def _check_cost(self, state: LoopState) -> None:
        """End the run before a turn that would pass ``max_cost_usd``: the next turn is
        estimated from the last one (its input is at least as large)."""
        cap = self.config.max_cost_usd
        last = state.last_turn
        if cap is None or last is None:
            return
        spent, estimate = state.usage.cost_usd, last.cost_usd
        if spent is None or estimate is None:
            if not state.cost_warned:
                state.cost_warned = True
                log.warning("the model's price is unknown: the cost limit cannot be enforced")
            return
        if spent + estimate > cap:
            raise Finish(
                "resource_cap",
                error=f"cost limit of ${cap:.4f} reached: spent ${spent:.4f}, "
                f"the next turn would cost about ${estimate:.4f}",
            )

    # ------------------------------------------------------------------ think

    async def _think(self, turn: int, state: LoopState) -> Response:
        request = Request(
            messages=(system(self.config.system_prompt), *state.history),
            tools=self._tools,
            max_tokens=self.config.max_tokens,
            thinking=self.config.thinking,
            # Breakpoints on the tools, the system prompt and the end of the conversation so
            # far: each turn reads what the previous one wrote (docs/llm.md, caching).
            cache=self.config.prompt_cache,
        )
        response = await stream_turn(self.provider, request, sink=self.sink, turn=turn)
        usage = await price_usage(
            response.usage,
            model=self.provider.model or response.model,
            provider=self.provider.name,
        )
        return response.model_copy(update={"usage": usage})

    # ------------------------------------------------------------------ act

    async def _act(
        self, turn: int, response: Response, calls: list[ToolCallPart], state: LoopState
    ) -> TurnObservation:
        results: list[ToolResultPart] = []
        observed: list[ToolObservation] = []
        changed: list[str] = []
        blocked_only = True
        redact = self.sink.redactor.text
        for call in calls:
            await self.sink.emit(
                ev.ToolCall, turn=turn, call_id=call.id, name=call.name, arguments=call.arguments
            )
            allowed, reason = await self._approve(turn, call)
            if not allowed:
                output = (
                    f"refused by the approval policy: {reason}. Do not ask for this action "
                    "again; continue with what is allowed or answer."
                )
                await self.sink.emit(
                    ev.ToolResult,
                    turn=turn,
                    call_id=call.id,
                    name=call.name,
                    ok=False,
                    output=output,
                )
                results.append(
                    ToolResultPart(
                        tool_call_id=call.id, name=call.name, content=output, is_error=True
                    )
                )
                observed.append(
                    ToolObservation(
                        call_id=call.id,
                        name=call.name,
                        arguments=call.arguments,
                        ok=False,
                        output=output,
                        blocked=True,
                    )
                )
                continue
            blocked_only = False
            if call.name in EDIT_TOOLS and self._tracker is not None:
                baseline = await self._tracker.ensure_baseline()
                if baseline is not None:
                    # Detectors that judge progress against the pre-edit state (intel's
                    # build-diagnostics detector) learn what was already broken.
                    for detector in self.detectors:
                        setter = getattr(detector, "set_baseline", None)
                        if callable(setter):
                            setter(baseline)
            outcome = await self._toolbox.call(call.name, call.arguments, call.raw_arguments)
            output = redact(outcome.output)
            state.observed = state.observed or outcome.observed
            await self.sink.emit(
                ev.ToolResult,
                turn=turn,
                call_id=call.id,
                name=call.name,
                ok=outcome.ok,
                output=output,
                duration_ms=outcome.duration_ms,
                observed=outcome.observed,
                truncated=outcome.truncated,
                locations=[
                    {"path": redact(path), "line": line, "column": column}
                    for path, line, column in outcome.locations
                ],
            )
            for path, action in outcome.edits:
                changed.append(path)
                await self.sink.emit(ev.Edit, turn=turn, path=path, action=action)
            results.append(
                ToolResultPart(
                    tool_call_id=call.id, name=call.name, content=output, is_error=not outcome.ok
                )
            )
            observed.append(
                ToolObservation(
                    call_id=call.id,
                    name=call.name,
                    arguments=call.arguments,
                    ok=outcome.ok,
                    output=output,
                )
            )
        state.blocked_streak = state.blocked_streak + 1 if blocked_only else 0
        snapshot = await self._after_edits(turn, changed, results) if changed else None
        if snapshot is not None:
            # The model receives the build's state after its edits: an observation of real
            # state, so an answer after it is verified (docs/intel.md).
            state.observed = True
        state.history.append(tool_results(*results))
        return TurnObservation(
            turn=turn,
            text=response.text(),
            tool_calls=tuple(observed),
            edited=bool(changed),
            diagnostics=snapshot,
        )

    async def _approve(self, turn: int, call: ToolCallPart) -> tuple[bool, str]:
        if call.name in READ_ONLY_TOOLS:
            return True, "read-only tool"
        tier = getattr(self.approval, "tier", None)
        where = tier.describe() if isinstance(tier, Tier) else None
        try:
            decision = await self.approval.decide(
                ApprovalRequest(
                    tool=call.name,
                    arguments=call.arguments,
                    call_id=call.id,
                    external=self._external.get(call.name),
                )
            )
        except asyncio.CancelledError:
            # Cancelled while a human was being asked: record the denial, then stop.
            if getattr(self.approval, "asker", None) is None:
                raise
            await self.sink.emit(
                ev.Approval,
                turn=turn,
                call_id=call.id,
                name=call.name,
                decision="denied",
                reason="denied: the run was cancelled while asking",
                asked=True,
                answered_by="canceled",
                tier=where,
            )
            raise
        if decision.asked:
            label = "approved" if decision.allowed else "denied"
        else:
            label = "allowed" if decision.allowed else "blocked"
        await self.sink.emit(
            ev.Approval,
            turn=turn,
            call_id=call.id,
            name=call.name,
            decision=label,
            reason=decision.reason,
            asked=decision.asked,
            answered_by=decision.answered_by,
            scope=decision.scope,
            tier=where,
        )
        return decision.allowed, decision.reason

    async def _after_edits(
        self, turn: int, changed: list[str], results: list[ToolResultPart]
    ) -> DiagnosticsSnapshot | None:
        assert changed
        if self._tracker is None:
            return None
        outcome = await self._tracker.after_edits(sorted(set(changed)))
        if outcome is None:
            return None
        snapshot, delta = outcome
        await self.sink.emit(
            ev.Diagnostics,
            turn=turn,
            fingerprint=snapshot.fingerprint,
            total=delta.total,
            new=list(delta.new),
            fixed=list(delta.fixed),
            unchanged=len(delta.unchanged),
            checks=list(snapshot.checks),
        )
        # The delta rides on the last tool result so the message order stays valid everywhere.
        last = results[-1]
        note = self.sink.redactor.text(render_delta(delta))
        results[-1] = last.model_copy(update={"content": f"{last.content}\n\n{note}"})
        return snapshot

    # ------------------------------------------------------------------ answer and memory

    async def _answer(self, task: str, answer: str, state: LoopState) -> Finish:
        targets_fixed: bool | None = None
        if self.targets and self._tracker is not None:
            snapshot = await self._tracker.current()
            if snapshot is not None:
                targets_fixed = self._judge(snapshot, self.targets)
                state.observed = True
        if state.observed:
            await self._store(task, answer, state)
        elif self.memory is not None:
            await self.sink.emit(ev.MemoryEvent, action="skipped", detail="answer not verified")
        outcome: ev.Outcome = "answered" if state.observed else "unverified"
        return Finish(outcome, answer=answer, targets_fixed=targets_fixed)

    async def _recall(self, task: str) -> list[str]:
        if self.memory is None:
            return []
        timeout = self.config.memory_timeout_s
        return await _memory.recall(self.memory, task, sink=self.sink, timeout=timeout)

    async def _store(self, task: str, answer: str, state: LoopState) -> None:
        if self.memory is None:
            return
        await _memory.store(
            self.memory,
            task=task,
            answer=answer,
            transcript=state.history,
            sink=self.sink,
            timeout=self.config.memory_timeout_s,
        )
