"""Checkpoint cost per turn on a 10,000-file repository (docs/review.md, "Checkpoints").

    python -m bench checkpoint [--files 10000] [--turns 15]

Each turn changes K files in the scratch copy (a view where the machine allows one), then
``checkpoints_of(scratch).record(turn)`` is timed. Reported: the median per turn for a one-file
turn and for a 100-file turn, beside the baseline of ``scratch.changes()`` (the full diff a
review computes once per run) on the same copy. Ratios, never pass/fail.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench._results import Row, ratio, report
from driveros.review import ScratchWorkspace, checkpoints_of


def _repo(root: Path, n: int) -> None:
    for i in range(n):
        d = root / f"pkg{i // 100:03d}"
        d.mkdir(exist_ok=True)
        (d / f"mod{i % 100:02d}.py").write_text(f"X = {i}\n")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env)


async def _measure(
    repo: Path, base: Path, per_turn: int, turns: int
) -> tuple[list[float], float, str]:
    async with await ScratchWorkspace.create(repo, base_dir=base) as scratch:
        cps = checkpoints_of(scratch)
        times: list[float] = []
        for t in range(1, turns + 1):
            for k in range(per_turn):
                i = (t * per_turn + k) % 10_000
                p = scratch.path / f"pkg{i // 100:03d}" / f"mod{i % 100:02d}.py"
                p.write_text(f"X = {i}  # turn {t}\n")
            start = time.perf_counter()
            await cps.record(t)
            times.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        await scratch.changes()
        full = (time.perf_counter() - start) * 1000
        return times, full, scratch.strategy


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--turns", type=int, default=15)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        base = Path(tmp) / "scratch"
        base.mkdir()
        _repo(repo, args.files)
        rows: list[Row] = []
        one = 0.0
        for per_turn in (1, 100):
            times, full, strategy = await _measure(repo, base, per_turn, args.turns)
            med = statistics.median(times)
            if per_turn == 1:
                name = (
                    f"checkpoint per turn, {args.files:,} files, `{strategy}`, a one-file turn "
                    "(`make bench ARGS=checkpoint`)"
                )
                goal = f"<= 20 ms for a one-file turn: {'met' if med <= 20 else 'not met'}"
                one = med
            else:
                name = (
                    f"checkpoint per turn, {args.files:,} files, `{strategy}`, a {per_turn}-file "
                    "turn (same run)"
                )
                goal = (
                    f"proportional to the turn's changes: {med / one:.0f}x the one-file turn "
                    f"for {per_turn}x the files"
                )
            rows.append(
                Row(
                    benchmark=name,
                    measured=f"{med:.1f} ms median ({min(times):.1f}-{max(times):.1f} over "
                    f"{args.turns} turns)",
                    baseline=f"{full:.1f} ms `scratch.changes()` (the full diff a review "
                    "computes) on the same copy",
                    ratio=ratio(med, full),
                    goal=goal,
                )
            )
        report("checkpoint", rows)


if __name__ == "__main__":
    asyncio.run(main())
