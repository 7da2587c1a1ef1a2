"""Agent harness overhead per turn, side by side with pydantic-ai's agent loop.

Both loops run against the same scripted model (``driveros.testing.scripted``) served from a
separate process on loopback, so the model answers at once and its CPU is not ours. Every
turn is one ``read_file`` tool call on a different file, then a final text answer. Reported:

- ms/turn end to end (model request + response parsing + tool + loop bookkeeping) for both;
- ms/turn *excluding the model call* (driveros: everything but ``provider.stream``; pydantic-ai:
  everything but ``Model.request``): the harness itself (for driveros: events, approval,
  tool dispatch through the sandbox, redaction, stuck detectors, context budget), plus the
  CPU time of that part for driveros (robust on a busy machine);
- the ratios driveros / pydantic-ai (below 1.0 means driveros is faster).

pydantic-ai (``pydantic-ai-slim[openai]``) is optional: without it the comparison prints
"not installed". Its tool reads the file directly (no sandbox), and it uses its own
non-streaming request; driveros streams. Not a pass/fail test.

Then prompt caching: input tokens billed per run on a scripted 30-turn run over the Anthropic
wire, with the loop's cache breakpoints and without them, as a ratio (goal: at most 0.3). The
requests the agent really sent are billed by a simulated Anthropic prompt cache
(:func:`billed_input`): a prefix that ends at a breakpoint is written (1.25x the input price),
a later request whose breakpoint, or a block up to 20 before it, ends the same prefix reads it
(0.1x), the rest is plain input; tokens are estimated at 4 characters each.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from bench._results import Row, goal_met, ratio, report
from driveros.agent import Agent, AgentConfig, Event
from driveros.approval import AllowAllApproval
from driveros.llm import Provider, Request, StreamEvent, anthropic
from driveros.llm.openaicompat import openai
from driveros.sandbox import LocalSandbox
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

TURNS = 100
ROUNDS = 3
CACHE_TURNS = 30
#: Anthropic's prices relative to plain input: cache writes (5 minutes) and cache reads.
WRITE_PRICE = 1.25
READ_PRICE = 0.1
#: How many blocks before a breakpoint Anthropic looks for an earlier cache entry.
LOOKBACK = 20


def script(turns: int) -> list[dict[str, Any]]:
    calls = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": f"f{i:03d}.txt"}}]}
        for i in range(turns)
    ]
    return [*calls, {"text": "done"}]


class _TimedProvider:
    """Wraps a provider and adds up the time spent inside ``stream()``."""

    def __init__(self, inner: Provider) -> None:
        self._inner = inner
        self.model_s = 0.0
        self.model_cpu_s = 0.0

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def model(self) -> str:
        return self._inner.model

    async def generate(self, req: Request) -> Any:
        return await self._inner.generate(req)

    async def stream(self, req: Request) -> AsyncIterator[StreamEvent]:
        started, cpu = time.perf_counter(), time.process_time()
        try:
            async for event in self._inner.stream(req):
                yield event
        finally:
            self.model_s += time.perf_counter() - started
            self.model_cpu_s += time.process_time() - cpu

    async def aclose(self) -> None:
        await self._inner.aclose()


async def _serve(script_path: Path) -> tuple[asyncio.subprocess.Process, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "driveros.testing.scripted",
        "--script",
        str(script_path),
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    info = json.loads(await proc.stdout.readline())
    return proc, str(info["openai_base_url"])


async def _stop(proc: asyncio.subprocess.Process) -> None:
    proc.terminate()
    await proc.wait()


async def run_driveros(workspace: Path, script_path: Path) -> tuple[float, float, float]:
    """ms/turn: end to end, wall time excluding the model call, CPU time excluding it."""
    proc, url = await _serve(script_path)
    try:
        provider = _TimedProvider(openai("scripted", api_key="bench", base_url=url))
        events = 0

        async def on_event(event: Event) -> None:
            nonlocal events
            events += 1

        async with LocalSandbox(workspace) as sandbox:
            agent = Agent(
                provider,
                sandbox,
                config=AgentConfig(max_iterations=TURNS + 5),
                approval=AllowAllApproval(),
                on_event=on_event,
            )
            started, cpu = time.perf_counter(), time.process_time()
            run = await agent.run("read every file")
            wall = time.perf_counter() - started
            cpu = time.process_time() - cpu
        await provider.aclose()
        assert run.result.outcome == "answered", run.result
        turns = run.result.turns
        return (
            wall * 1000 / turns,
            (wall - provider.model_s) * 1000 / turns,
            (cpu - provider.model_cpu_s) * 1000 / turns,
        )
    finally:
        await _stop(proc)


async def run_pydantic_ai(workspace: Path, script_path: Path) -> tuple[float, float] | None:
    """ms/turn (end to end, excluding the model call), or None without pydantic-ai."""
    try:
        from pydantic_ai import Agent as PaiAgent
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.models.wrapper import WrapperModel
        from pydantic_ai.providers.openai import OpenAIProvider
        from pydantic_ai.usage import UsageLimits
    except ImportError:
        return None

    class TimedModel(WrapperModel):
        model_s = 0.0

        async def request(self, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await super().request(*args, **kwargs)
            finally:
                TimedModel.model_s += time.perf_counter() - started

    proc, url = await _serve(script_path)
    try:
        inner = OpenAIChatModel("scripted", provider=OpenAIProvider(base_url=url, api_key="bench"))
        model = TimedModel(inner)
        TimedModel.model_s = 0.0
        agent = PaiAgent(model)

        @agent.tool_plain
        def read_file(path: str) -> str:
            """Read a text file of the workspace."""
            return (workspace / path).read_text()

        started = time.perf_counter()
        result = await agent.run(
            "read every file", usage_limits=UsageLimits(request_limit=TURNS + 5)
        )
        wall = time.perf_counter() - started
        assert result.output == "done", result.output
        turns = TURNS + 1
        return wall * 1000 / turns, (wall - TimedModel.model_s) * 1000 / turns
    finally:
        await _stop(proc)


async def amain() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace = root / "ws"
        workspace.mkdir()
        for i in range(TURNS):
            (workspace / f"f{i:03d}.txt").write_text(f"file {i}\n" * 20)
        script_path = root / "script.json"
        script_path.write_text(json.dumps(script(TURNS)))
        ours_total: list[float] = []
        ours_harness: list[float] = []
        ours_cpu: list[float] = []
        theirs: list[float] = []
        theirs_harness: list[float] = []
        for _ in range(ROUNDS):
            total, harness, cpu = await run_driveros(workspace, script_path)
            ours_total.append(total)
            ours_harness.append(harness)
            ours_cpu.append(cpu)
            other = await run_pydantic_ai(workspace, script_path)
            if other is not None:
                theirs.append(other[0])
                theirs_harness.append(other[1])
    total = statistics.median(ours_total)
    harness = statistics.median(ours_harness)
    print(f"turns per run: {TURNS + 1}, rounds: {ROUNDS} (medians)")
    print(f"driveros    end to end: {total:7.2f} ms/turn")
    print(f"driveros    harness only (excluding the model call): {harness:7.2f} ms/turn wall")
    print(f"driveros    harness only, CPU time: {statistics.median(ours_cpu):7.2f} ms/turn")
    if theirs:
        other = statistics.median(theirs)
        other_harness = statistics.median(theirs_harness)
        print(f"pydantic-ai end to end: {other:7.2f} ms/turn")
        print(
            f"pydantic-ai harness only (excluding the model call): {other_harness:7.2f} "
            "ms/turn wall"
        )
        print(f"ratio driveros/pydantic-ai (end to end): {total / other:.2f}")
        print(f"ratio driveros/pydantic-ai (harness only): {harness / other_harness:.2f}")
        peer = f"{other:.2f} ms/turn pydantic-ai", ratio(total, other)
        peer_harness = f"{other_harness:.2f} ms/turn pydantic-ai", ratio(harness, other_harness)
    else:
        print("pydantic-ai: not installed (pip install 'pydantic-ai-slim[openai]')")
        peer = peer_harness = ("pydantic-ai not installed", "n/a")
    ROWS.extend(
        [
            Row(
                benchmark=f"agent loop per turn end to end, {TURNS + 1}-turn run of `read_file` "
                f"calls against a scripted model, median of {ROUNDS} (`make bench ARGS=agent`)",
                measured=f"{total:.2f} ms/turn",
                baseline=peer[0],
                ratio=peer[1],
            ),
            Row(
                benchmark="agent harness per turn, excluding the model call (same run; CPU "
                f"{statistics.median(ours_cpu):.2f} ms/turn)",
                measured=f"{harness:.2f} ms/turn",
                baseline=peer_harness[0],
                ratio=peer_harness[1],
            ),
        ]
    )


def _blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """A Messages request as its cacheable blocks in cache order: (text, is_breakpoint)."""
    out: list[tuple[str, bool]] = []
    blocks = [*body.get("tools", []), *body.get("system", [])]
    blocks += [b for m in body["messages"] for b in m["content"]]
    for block in blocks:
        plain = {k: v for k, v in block.items() if k != "cache_control"}
        out.append((json.dumps(plain, sort_keys=True), "cache_control" in block))
    return out


def billed_input(bodies: list[dict[str, Any]]) -> tuple[float, int]:
    """(billed input tokens in plain-input equivalents, input tokens) of ``bodies`` in order,
    through a simulated Anthropic prompt cache (module docstring)."""
    cache: set[str] = set()
    billed = 0.0
    total_all = 0
    for body in bodies:
        blocks = _blocks(body)
        digests: list[str] = []
        ends: list[int] = []
        running = hashlib.sha256()
        tokens = 0
        for text, _ in blocks:
            running.update(text.encode())
            digests.append(running.hexdigest())
            tokens += len(text) // 4 + 1
            ends.append(tokens)
        breakpoints = [i for i, (_, mark) in enumerate(blocks) if mark]
        read = 0
        for point in breakpoints:
            for j in range(point, max(point - LOOKBACK, -1), -1):
                if digests[j] in cache:
                    read = max(read, ends[j])
                    break
        written = max((ends[p] for p in breakpoints), default=0)
        write = max(written - read, 0)
        cache.update(digests[p] for p in breakpoints)
        billed += (tokens - read - write) + READ_PRICE * read + WRITE_PRICE * write
        total_all += tokens
    return billed, total_all


async def cached_run(workspace: Path, *, cache: bool, turns: int = CACHE_TURNS) -> float:
    """Billed input tokens of one scripted ``turns``-turn run over the Anthropic wire."""
    script_turns = [
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": f"f{i:03d}.txt"})])
        for i in range(turns - 1)
    ]
    async with ScriptedModelServer([*script_turns, Turn(text="done")]) as server:
        provider = anthropic.claude("scripted", api_key="bench", base_url=server.anthropic_base_url)
        async with LocalSandbox(workspace) as sandbox:
            agent = Agent(
                provider,
                sandbox,
                config=AgentConfig(max_iterations=turns + 5, prompt_cache=cache),
                approval=AllowAllApproval(),
            )
            run = await agent.run("read every file")
        await provider.aclose()
        bodies = list(server.requests)
    assert run.result.outcome == "answered", run.result
    assert len(bodies) == turns
    billed, _ = billed_input(bodies)
    return billed


async def caching_ratio(workspace: Path, turns: int = CACHE_TURNS) -> tuple[float, float]:
    """Billed input tokens per run (with the loop's caching, without it)."""
    return (
        await cached_run(workspace, cache=True, turns=turns),
        await cached_run(workspace, cache=False, turns=turns),
    )


async def amain_caching() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        for i in range(CACHE_TURNS):
            (workspace / f"f{i:03d}.txt").write_text(f"file {i}\n" * 20)
        cached, plain = await caching_ratio(workspace)
    print(f"prompt caching, {CACHE_TURNS}-turn scripted run (Anthropic wire, simulated cache):")
    print(f"  input tokens billed per run with caching:    {cached:9.0f}")
    print(f"  input tokens billed per run without caching: {plain:9.0f}")
    print(f"  ratio: {cached / plain:.2f}x (goal: at most 0.30x)")
    ROWS.append(
        Row(
            benchmark=f"prompt caching, input tokens billed per {CACHE_TURNS}-turn run "
            "(Anthropic wire, simulated cache; same run)",
            measured=f"{cached:.0f}",
            baseline=f"{plain:.0f} without caching",
            ratio=ratio(cached, plain),
            goal=goal_met("<= 0.30x", cached <= 0.3 * plain),
        )
    )


#: What this run measured, reported into bench/RESULTS.md at the end.
ROWS: list[Row] = []


def main() -> None:
    asyncio.run(amain())
    asyncio.run(amain_caching())
    report("agent", ROWS)


if __name__ == "__main__":
    main()
