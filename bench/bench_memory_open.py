"""What the memory store's open-time check costs, side by side with the quick check it replaced.

For stores of 1k and 10k facts (``--big`` adds 100k): ``quick_check`` alone (what every open
ran before), the full check (``integrity_check`` + UTF-8 of every text value + FTS5
``integrity-check``), and the cached result (the file unchanged since a sound check), each the
median of a few runs; then a whole ``MemoryStore.open`` + ``aclose`` with the check cached.
Ratios against ``quick_check``, never pass/fail timings.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._results import Row, goal_met, ratio, report
from driveros.memory import MemoryStore, Provenance
from driveros.memory import _health as health
from driveros.memory._check import identity, known_sound, remember_sound

RUNS = 5


async def _seed(db: Path, n: int) -> None:
    async with await MemoryStore.open(db, scope="bench") as store:
        for start in range(0, n, 500):
            texts = [
                f"fact {i}: module {i} builds with make target-{i}"
                for i in range(start, start + 500)
            ]
            await store.apply(adds=texts, provenance=Provenance(run_id="bench"))


def _median_ms(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def _open_close(db: Path) -> None:
    store = await MemoryStore.open(db, scope="bench")
    await store.aclose()


def main() -> None:
    sizes = [1_000, 10_000] + ([100_000] if "--big" in sys.argv else [])
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("DRIVEROS_STATE_DIR", str(Path(tmp) / "state"))
        for n in sizes:
            db = Path(tmp) / f"m{n}.db"
            asyncio.run(_seed(db, n))
            old = time.time() - 60
            os.utime(db, (old, old))  # not "racy": its sound result may be remembered
            quick = _median_ms(lambda db=db: health.check(db, full=False))
            full = _median_ms(lambda db=db: health.check(db, full=True))
            ident = identity(db)
            assert ident is not None
            remember_sound(db, ident)
            cached = _median_ms(lambda db=db: known_sound(db))
            opened = _median_ms(lambda db=db: asyncio.run(_open_close(db)))
            label = f"{n // 1000}k facts"
            first = not rows
            rows.append(
                Row(
                    benchmark=f"memory open-time check, {label}: full check (integrity, UTF-8, "
                    "FTS5)" + (" (`make bench ARGS=memory_open`)" if first else " (same run)"),
                    measured=f"{full:.1f} ms",
                    baseline=f"{quick:.1f} ms `quick_check`",
                    ratio=ratio(full, quick, 1),
                    goal="none; paid once per changed file (cached by identity)",
                )
            )
            rows.append(
                Row(
                    benchmark=f"memory open-time check, {label}, file unchanged since a sound "
                    "check (same run)",
                    measured=f"{cached:.2f} ms (open + close: {opened:.1f} ms)",
                    baseline=f"{quick:.1f} ms `quick_check`",
                    ratio=ratio(cached, quick, 3),
                    goal=goal_met("cheaper than the quick check it replaced", cached < quick),
                )
            )
    report("memory_open", rows)


if __name__ == "__main__":
    main()
