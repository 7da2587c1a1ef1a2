"""The tool loop: generate -> run tool calls (parallel, bounded) -> feed results back.

    runner = llm.Runner(provider, [read_file, search], max_steps=8)
    result = await runner.run(llm.Request(messages=[llm.user("...")]))
    async for event in runner.events(req): ...   # typed RunnerEvent values

It stops when a response has no tool calls, or at ``max_steps`` model calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from driveros._errors import ConfigError
from driveros.llm._provider import Provider
from driveros.llm._tools import Tool
from driveros.llm._types import (
    Message,
    Request,
    Response,
    StreamDone,
    StreamEvent,
    ToolCallPart,
    ToolResultPart,
    Usage,
)


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)

    step: int


class StepStarted(_Event):
    kind: Literal["step_started"] = "step_started"


class ModelDelta(_Event):
    """A stream delta from the model (only when the runner streams)."""

    kind: Literal["model_delta"] = "model_delta"
    delta: StreamEvent


class ModelResponded(_Event):
    kind: Literal["model_responded"] = "model_responded"
    response: Response


class ToolStarted(_Event):
    kind: Literal["tool_started"] = "tool_started"
    call: ToolCallPart


class ToolFinished(_Event):
    kind: Literal["tool_finished"] = "tool_finished"
    call: ToolCallPart
    result: ToolResultPart


class RunResult(BaseModel):
    """The outcome: the last response, the whole conversation and the summed usage."""

    model_config = ConfigDict(frozen=True)

    response: Response
    messages: tuple[Message, ...]
    usage: Usage
    steps: int
    #: "done": the model stopped calling tools; "step_cap": ``max_steps`` was reached.
    stopped: Literal["done", "step_cap"]

    def text(self) -> str:
        return self.response.text()


class RunFinished(_Event):
    kind: Literal["run_finished"] = "run_finished"
    result: RunResult


RunnerEvent = Annotated[
    StepStarted | ModelDelta | ModelResponded | ToolStarted | ToolFinished | RunFinished,
    Field(discriminator="kind"),
]


class Runner:
    """Drives one provider and a set of tools until the model answers."""

    def __init__(
        self,
        provider: Provider,
        tools: Sequence[Tool[Any]] = (),
        *,
        max_steps: int = 10,
        max_parallel: int = 4,
        stream: bool = False,
    ) -> None:
        if max_steps < 1 or max_parallel < 1:
            raise ConfigError("max_steps and max_parallel must be at least 1")
        self.provider = provider
        self.tools = {t.name: t for t in tools}
        if len(self.tools) != len(tools):
            raise ConfigError("tool names must be unique")
        self.max_steps = max_steps
        self.max_parallel = max_parallel
        self.stream = stream

    async def run(self, req: Request) -> RunResult:
        """Run to the end and return the result (events are discarded)."""
        async for event in self.events(req):
            if isinstance(event, RunFinished):
                return event.result
        raise AssertionError("the runner always ends with RunFinished")  # pragma: no cover

    async def events(self, req: Request) -> AsyncIterator[RunnerEvent]:
        """Yield typed events as the loop progresses; the last one is ``RunFinished``."""
        messages = list(req.messages)
        specs = tuple(t.spec for t in self.tools.values())
        tools = req.tools + tuple(s for s in specs if s.name not in {t.name for t in req.tools})
        usage = Usage()
        response: Response | None = None
        for step in range(1, self.max_steps + 1):
            yield StepStarted(step=step)
            turn = req.model_copy(update={"messages": tuple(messages), "tools": tools})
            if self.stream:
                async for event in self.provider.stream(turn):
                    if isinstance(event, StreamDone):
                        response = event.response
                    else:
                        yield ModelDelta(step=step, delta=event)
            else:
                response = await self.provider.generate(turn)
            assert response is not None
            usage = usage + response.usage
            messages.append(response.message())
            yield ModelResponded(step=step, response=response)
            calls = response.tool_calls
            if not calls:
                result = RunResult(
                    response=response,
                    messages=tuple(messages),
                    usage=usage,
                    steps=step,
                    stopped="done",
                )
                yield RunFinished(step=step, result=result)
                return
            for call in calls:
                yield ToolStarted(step=step, call=call)
            results = await self._run_calls(calls)
            for call, res in zip(calls, results, strict=True):
                yield ToolFinished(step=step, call=call, result=res)
            messages.append(Message(role="tool", parts=tuple(results)))
        assert response is not None
        yield RunFinished(
            step=self.max_steps,
            result=RunResult(
                response=response,
                messages=tuple(messages),
                usage=usage,
                steps=self.max_steps,
                stopped="step_cap",
            ),
        )

    async def _run_calls(self, calls: list[ToolCallPart]) -> list[ToolResultPart]:
        limit = asyncio.Semaphore(self.max_parallel)

        async def one(call: ToolCallPart) -> ToolResultPart:
            handler = self.tools.get(call.name)
            if handler is None:
                known = ", ".join(self.tools) or "none"
                return ToolResultPart(
                    tool_call_id=call.id,
                    name=call.name,
                    content=f"Error: unknown tool {call.name!r}; available tools: {known}",
                    is_error=True,
                )
            async with limit:
                return await handler(call)

        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(call)) for call in calls]
        return [t.result() for t in tasks]
