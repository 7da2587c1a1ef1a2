"""OpenTelemetry on versus off: wall time per turn of a whole run (``execute_run``).

The same scripted 40-turn run (each turn one ``read_file``, then an answer) runs with tracing
off and on, interleaved over rounds (the order alternating); "on" exports every span over
OTLP/HTTP to a loopback receiver in this process (each run's ``result`` flushes, so the export
is inside the timing).
The scripted model runs in this process too, so both sides pay the same for it. Reported:
median ms per turn, off and on, and the ratio (goal <= 1.05). Not a pass/fail test.

    python bench/bench_otel.py
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench._results import Row, goal_met, ratio, report
from driveros.agent import Event
from driveros.config import load_environment
from driveros.runs import RunSpec, execute_run
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

TURNS = 40
ROUNDS = 9


class _Sink(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return


async def _run(workspace: Path, environ: dict[str, str], keep: list[Event] | None = None) -> float:
    turns = [
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": f"f{i}.txt"})]) for i in range(TURNS)
    ]
    turns.append(Turn(text="done"))

    async def on_event(event: Event) -> None:
        if keep is not None:
            keep.append(event)

    async with ScriptedModelServer(turns) as server:
        env = load_environment(
            cwd=workspace,
            environ=environ
            | {
                "OPENAI_API_KEY": "bench",
                "OPENAI_BASE_URL": server.openai_base_url,
                "OPENAI_MODEL": "scripted",
            },
        )
        spec = RunSpec(
            task="read the files", workspace=workspace, diagnostics=False, max_iterations=TURNS + 5
        )
        start = time.perf_counter()
        await execute_run(spec, env=env, on_event=on_event)
        return (time.perf_counter() - start) * 1000 / (TURNS + 1)


async def main() -> None:
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{receiver.server_address[1]}"
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tempfile.gettempdir()}
    off: list[float] = []
    on: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        for i in range(TURNS):
            (workspace / f"f{i}.txt").write_text(f"file {i}\n" * 20)
        await _run(workspace, base)  # warm-up
        await _run(workspace, base | {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint})
        traced = base | {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
        for round_ in range(ROUNDS):  # the order alternates, so neither side goes first always
            if round_ % 2:
                on.append(await _run(workspace, traced))
                off.append(await _run(workspace, base))
            else:
                off.append(await _run(workspace, base))
                on.append(await _run(workspace, traced))
        events: list[Event] = []
        await _run(workspace, base, keep=events)
        replay = await _replay(events, traced)
    receiver.shutdown()
    m_off, m_on = statistics.median(off), statistics.median(on)
    traced_turn = (m_off + replay) / m_off
    report(
        "otel",
        [
            Row(
                benchmark=f"OpenTelemetry export per turn, tracing alone: a {TURNS + 1}-turn "
                "run's events through the span recorder, OTLP/HTTP export to a loopback "
                "receiver and the flush at `result`, CPU (`make bench ARGS=otel`)",
                measured=f"{replay:.3f} ms/turn",
                baseline=f"{m_off:.2f} ms/turn, the same run untraced",
                ratio=f"{traced_turn:.3f} (off turn + tracing)",
                goal=goal_met("<= 1.05x harness time per turn", traced_turn <= 1.05),
            ),
            Row(
                benchmark=f"OpenTelemetry on vs off end to end, wall time per turn, {ROUNDS} "
                "interleaved rounds (same run)",
                measured=f"{m_on:.2f} ms/turn",
                baseline=f"{m_off:.2f} ms/turn off",
                ratio=ratio(m_on, m_off),
                goal="none (the CPU row above is the measure)",
            ),
        ],
    )


async def _replay(events: list[Event], environ: dict[str, str]) -> float:
    """CPU ms per turn the tracing adds: a run's events through the tracing wrapper, the
    export of their spans and the flush at ``result`` included (median of rounds)."""
    from driveros.otel import with_otel

    async def nothing(event: Event) -> None:
        return None

    samples = []
    for _ in range(ROUNDS):
        watch = await with_otel(nothing, environ)
        start = time.process_time()
        for event in events:
            await watch(event)
        samples.append((time.process_time() - start) * 1000 / (TURNS + 1))
    return statistics.median(samples)


if __name__ == "__main__":
    asyncio.run(main())
