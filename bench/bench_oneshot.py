"""What discarding the one-shot feed's writes costs (docs/sandbox.md, "Sandboxes that discard
their writes"): a local sandbox's start + one command + close, and the feed's first snapshot
of each corpus project (more-itertools, qs, go-difflib: tests/intel/_corpus.py, fetched by
scripts/fetch-corpus.sh), through the throwaway overlay and the read-only fallback, side by
side with an ordinary writable sandbox in the same run (interleaved; medians). Ratios, never
pass/fail timings.

python -m bench oneshot
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

from bench._results import Row, ratio, report

ROUNDS = 7
CORPUS_ROUNDS = 3
MODES = ("writable", "overlay", "read-only")


async def _once(root: Path, mode: str, env: dict[str, str], *, feed: bool) -> float:
    from driveros.intel import DiagnosticsFeed
    from driveros.sandbox import LocalSandbox
    from driveros.sandbox import _local as local_tier

    no_overlay = mock.patch.object(local_tier, "overlay_prefix", lambda *_: None)
    with no_overlay if mode == "read-only" else contextlib.nullcontext():
        start = time.perf_counter()
        async with LocalSandbox(root, base_env=env, discard_writes=mode != "writable") as box:
            if feed:
                await DiagnosticsFeed(box).snapshot()
            else:
                await box.run("true")
            assert box.workspace_access == mode, box.workspace_access
        return time.perf_counter() - start


async def _start_rows() -> list[Row]:
    env = {"PATH": "/usr/bin:/bin"}
    times: dict[str, list[float]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory(prefix="bench-oneshot-") as tmp:
        root = Path(tmp, "ws")
        root.mkdir()
        (root / "a.py").write_text("x = 1\n")
        await _once(root, "overlay", env, feed=False)  # the helper's probe, once a process
        for _ in range(ROUNDS):
            for mode in MODES:
                times[mode].append(await _once(root, mode, env, feed=False))
    base = statistics.median(times["writable"]) * 1000
    rows = []
    for mode in ("overlay", "read-only"):
        ms = statistics.median(times[mode]) * 1000
        rows.append(
            Row(
                benchmark=(
                    f"one-shot feed sandbox, start + `true` + close, workspace {mode} "
                    f"(`python -m bench oneshot`, {ROUNDS} interleaved rounds, median)"
                ),
                measured=f"{ms:.0f} ms",
                baseline=f"{base:.0f} ms writable workspace (same run)",
                ratio=f"{ratio(ms, base)} (+{ms - base:.0f} ms)",
                goal="none; paid once per --fix or save",
            )
        )
    return rows


async def _corpus_rows() -> list[Row]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.intel._corpus import PROJECTS
    from tests.intel._projects import tool_env

    rows = []
    for project in PROJECTS:
        times: dict[str, list[float]] = {m: [] for m in MODES}
        with tempfile.TemporaryDirectory(prefix="bench-oneshot-corpus-") as tmp:
            root = project.build(Path(tmp, "p"))
            for turn in range(CORPUS_ROUNDS):  # each mode first once
                for mode in MODES[turn % 3 :] + MODES[: turn % 3]:
                    times[mode].append(await _once(root, mode, tool_env(), feed=True))
        took = {m: statistics.median(t) for m, t in times.items()}
        base = took["writable"]
        rows.append(
            Row(
                benchmark=(
                    f"one-shot feed, first snapshot of {project.name} with one bug, "
                    f"overlay workspace (same run, {CORPUS_ROUNDS} rounds, median)"
                ),
                measured=f"{took['overlay']:.2f} s (read-only: {took['read-only']:.2f} s)",
                baseline=f"{base:.2f} s writable workspace",
                ratio=(
                    f"{ratio(took['overlay'], base)} (read-only {ratio(took['read-only'], base)})"
                ),
                goal="same diagnostics (tests/security/test_oneshot_sandbox.py): met; time: none",
            )
        )
    return rows


async def main() -> None:
    rows = await _start_rows()
    rows += await _corpus_rows()
    report("oneshot", rows)


if __name__ == "__main__":
    asyncio.run(main())
