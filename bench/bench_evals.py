"""Cases per minute: the local executor against Ray on the same machine, side by side.

Runs the replayed ``smoke`` and ``fix-failing-test`` suites (offline, deterministic) with the
same concurrency on ``LocalExecutor`` and on ``RayExecutor`` (a local Ray cluster this run
starts once, not counted, in a network namespace of its own so it talks over loopback only)
and prints cases/minute and the ratio ray / local. On one machine expect parity or a little
less (each Ray task unpacks the suite and starts a fresh event loop); the point of Ray is
the scaling path past one machine (docs/evals.md), not speed here. Needs ``driveros[ray]``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._results import Row, ratio, report
from driveros.config import load_environment
from driveros.evals import (
    EvalOptions,
    Executor,
    LocalExecutor,
    RayExecutor,
    load_suite,
    run_suite,
)

SUITES = ("smoke", "fix-failing-test")
CONCURRENCY, ROUNDS = 2, 2
_NETNS_FLAG = "DRIVEROS_BENCH_NETNS"


async def _cases_per_minute(make: type[LocalExecutor] | type[RayExecutor], out: Path) -> float:
    env = load_environment(cwd=out)
    cases, started = 0, time.perf_counter()
    for round_no in range(ROUNDS):
        for name in SUITES:
            suite = load_suite(name)
            options = EvalOptions(
                mode="replay", output_dir=out / f"{name}-{round_no}", resume=False
            )
            executor: Executor = make(concurrency=CONCURRENCY)
            run = await run_suite(suite, options, env=env, executor=executor)
            cases += len(run.cases)
    return cases / ((time.perf_counter() - started) / 60)


def _in_private_netns() -> bool:
    """Ray binds every interface; on these machines it may only talk over loopback."""
    return os.environ.get(_NETNS_FLAG) == "1"


def _rerun_in_netns() -> None:
    inner = f"ip link set lo up && {_NETNS_FLAG}=1 exec {sys.executable} -m bench.bench_evals"
    subprocess.run(["unshare", "-n", "sh", "-c", inner], check=False)


async def main() -> None:
    if not _in_private_netns():
        if os.geteuid() != 0:
            print("skipped: needs root to keep the Ray cluster on loopback (unshare -n)")
            return
        _rerun_in_netns()
        return
    import ray

    with tempfile.TemporaryDirectory(prefix="bench-evals-") as tmp:
        root = Path(tmp)
        local = await _cases_per_minute(LocalExecutor, root / "local")
        started = time.perf_counter()
        ray.init(include_dashboard=False, log_to_driver=False)  # once, as a standing cluster
        print(f"local Ray cluster up in {time.perf_counter() - started:.1f} s (not counted)")
        try:
            ray_rate = await _cases_per_minute(RayExecutor, root / "ray")
        finally:
            ray.shutdown()
    print(f"{'executor':<10}{'cases/min':>12}")
    print(f"{'local':<10}{local:>12.1f}")
    print(f"{'ray':<10}{ray_rate:>12.1f}")
    print(f"ratio ray/local: {ray_rate / local:.2f}x (1.0 = parity; >1 faster)")
    report(
        "evals",
        [
            Row(
                benchmark="evals, cases per minute on a local Ray cluster, the replayed `smoke` "
                "and `fix-failing-test` suites (`make bench ARGS=evals`)",
                measured=f"{ray_rate:.1f} cases/min",
                baseline=f"{local:.1f} cases/min `LocalExecutor`, same concurrency",
                ratio=ratio(ray_rate, local),
                goal="none; parity on one machine, Ray is the path past it",
            )
        ],
    )


if __name__ == "__main__":
    asyncio.run(main())
