"""20 runs at once with the diagnostics feed on: codeAction p99 against idle, in one session.

A Python project (ruff, mypy and pytest detected) and 20 agent runs started together, each
editing a module every turn so that the feed re-runs the project's checks after each edit. The
same server is probed idle first, then while the runs work; the result is the ratio of the
two p99s (goal: within 3x, issue 15 row 9). Every run of the server shares one diagnostics job
queue (``driveros.intel.default_limiter``, one batch per core), so the checks queue instead of
twenty pytest/mypy batches starting at once. A measurement, never a pass/fail assertion.

    python -m bench load
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from bench._results import Row, goal_met, report
from bench.bench_lsp import _latencies, _line, _pct, _scripted_model, _session, _start

RUNS = 20
TURNS = 4
PROBES = 300

PROJECT = {
    "pyproject.toml": '[project]\nname = "loadbench"\nversion = "0"\n',
    "calc.py": "def add(a: int, b: int) -> int:\n    return a - b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add() -> None:\n"
    "    assert add(2, 2) == 4\n",
}


def _turns() -> list[dict[str, object]]:
    """Edits that change a module every turn (two alternating bodies), then the answer."""
    bodies = ["def helper(x: int) -> int:\n    return x + 1\n", "def helper(x: int) -> str:\n"]
    turns: list[dict[str, object]] = []
    for i in range(RUNS * TURNS):
        turns.append(
            {
                "text": "Editing the helper.",
                "tool_calls": [
                    {
                        "name": "write_file",
                        "arguments": {"path": "helper.py", "content": bodies[i % 2]},
                    }
                ],
                "delay_s": 0.05,
            }
        )
    turns.append({"text": "done"})
    return turns


def _tree_rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its descendants (Linux /proc), in MB."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry.name))
            rss[int(entry.name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += children.get(p, [])
    return total / 1e6


def _get(obj: Any, key: str) -> Any:
    return obj[key] if isinstance(obj, dict) else getattr(obj, key)


async def _discard_proposals(client: Any) -> None:
    """Cancel every proposal the runs left, so that none is kept past the bench."""
    listing = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="driveros.agent.list", arguments=[{}])
    )
    for run in _get(listing, "runs"):
        if _get(run, "state") == "proposed":
            ref = {"runId": _get(run, "runId")}
            await client.workspace_execute_command_async(
                lsp.ExecuteCommandParams(command="driveros.agent.cancel", arguments=[ref])
            )


async def _bench(root: Path) -> None:
    script = root.parent / "script.json"
    script.write_text(json.dumps({"turns": _turns(), "repeat_last": True}))
    ours = [sys.executable, "-m", "driveros_lsp", "--stdio"]
    async with _scripted_model(script) as base_url:
        # the bench's own state directory and temp dir: the runs' scratch copies (and the
        # proposals they keep) go with the bench's temporary directory
        tmp = root.parent / "tmp"
        tmp.mkdir(exist_ok=True)
        env = {
            "OPENAI_BASE_URL": base_url,
            "OPENAI_API_KEY": "bench-key",
            "DRIVEROS_STATE_DIR": str(root.parent / "state"),
            "TMPDIR": str(tmp),
        }
        settings = {
            "provider": "openai",
            "model": "scripted-model",
            "maxConcurrentRuns": RUNS,
            "maxIterations": TURNS + 1,
        }
        async with _session(ours, root, env, settings) as (client, counts, _):
            server = client._server  # the server process, for its memory
            pid = server.pid if server is not None else os.getpid()
            await _latencies(client, root, 30)
            idle = await _latencies(client, root, PROBES)
            t0 = time.perf_counter()
            for i in range(RUNS):
                await _start(client, f"edit helper {i}")
            busy: list[float] = []
            peak = 0.0
            while counts["result"] < RUNS or len(busy) < PROBES:
                busy += await _latencies(client, root, 20)
                peak = max(peak, _tree_rss_mb(pid))
            wall = time.perf_counter() - t0
            await _discard_proposals(client)
            # the same server idle again: how much the machine's other work moved the baseline
            after = await _latencies(client, root, PROBES)
    print(f"textDocument/codeAction latency, one server, {RUNS} runs with the feed on:")
    print(_line("idle", idle))
    print(_line(f"{RUNS} runs at once", busy))
    print(_line("idle again, after the runs", after))
    ratio = _pct(busy, 0.99) / _pct(idle, 0.99)
    ratio50 = _pct(busy, 0.5) / _pct(idle, 0.5)
    print(f"  p99 ratio busy/idle {ratio:.2f}   (goal <= 3; probes {len(busy)})")
    print(f"  p50 ratio busy/idle {ratio50:.2f}")
    print(f"  max {max(busy):.1f} ms; all runs done in {wall:.1f} s; peak RSS {peak:.0f} MB")
    after99 = _pct(after, 0.99)
    report(
        "load",
        [
            Row(
                benchmark=f"load: codeAction p99, one server, {RUNS} runs with the feed on, idle "
                f"probed first (`make bench ARGS=load`; all runs done in {wall:.1f} s, peak "
                f"RSS {peak:.0f} MB)",
                measured=f"{_pct(busy, 0.99):.2f} ms",
                baseline=f"{_pct(idle, 0.99):.2f} ms idle ({after99:.2f} ms idle again after)",
                ratio=f"{ratio:.2f}",
                goal=goal_met("<= 3x idle p99", ratio <= 3),
            ),
            Row(
                benchmark="load: codeAction p50, same run",
                measured=f"{_pct(busy, 0.5):.2f} ms",
                baseline=f"{_pct(idle, 0.5):.2f} ms idle",
                ratio=f"{ratio50:.2f}",
            ),
        ],
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        for rel, text in PROJECT.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        asyncio.run(_bench(root))


if __name__ == "__main__":
    main()
