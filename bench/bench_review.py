"""Scratch start-up per strategy on generated git repositories, against worktree add and a copy.

For each size (default 1k and 10k files; ``BENCH_REVIEW_SIZES=1000,10000,100000`` for more;
``BENCH_REVIEW_STRATEGIES=overlay`` and ``BENCH_REVIEW_ROUNDS=1`` to keep a 100k run short)
and in one run, side by side: ``ScratchWorkspace.create`` with every strategy available on
this machine (``overlay``: a copy-on-write view; ``fuse-overlay``: the same without root;
``worktree``, ``copy``), a bare ``git worktree add`` of the same repository and
``shutil.copytree`` of it (the references).
Reports medians in ms, the ratio to ``git worktree add`` (issue 19's goal: overlay <= 0.2 at
10k files), the disk each run wrote (blocks under the scratch directory, the view's mount
excluded) and ``changes()`` after ten edits. Also prints the probe and what ``auto`` picks.

``run start`` is end to end: a review run (``driveros.runs.execute_run``, local sandbox, the
scripted model over loopback) from its call until the model has the first request; the scratch
copy is made by the run, with the strategy forced through ``$DRIVEROS_SCRATCH_STRATEGY``. It is
also measured on the same files in a plain directory (no ``.git``), per strategy. A
first run on a tiny repository takes the process's one-time import cost out of the numbers.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench._results import Row, goal_met, ratio, report
from driveros.config import load_environment
from driveros.review import STRATEGY_VAR, ScratchWorkspace, scratch_strategies
from driveros.runs import RunSpec, execute_run
from driveros.testing import ScriptedModelServer, Turn

ROUNDS = int(os.environ.get("BENCH_REVIEW_ROUNDS", "3"))
_SIZES_VAR = "BENCH_REVIEW_SIZES"
_STRATEGIES_VAR = "BENCH_REVIEW_STRATEGIES"


def _sizes() -> list[int]:
    raw = os.environ.get(_SIZES_VAR, "1000,10000")
    return [int(x) for x in raw.split(",") if x.strip()]


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def _generate(root: Path, files: int) -> None:
    body = "".join(f"value_{i} = {i}\n" for i in range(40))
    per_dir = 100
    for n in range(files):
        pkg = root / f"pkg{n // per_dir:04d}"
        if n % per_dir == 0:
            pkg.mkdir(parents=True)
        (pkg / f"mod{n % per_dir:03d}.py").write_text(f"# module {n}\n{body}")
    (root / ".gitignore").write_text("*.log\n.env\nbuild/\n__pycache__/\n.venv/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "gc.auto", "0")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-qm", "init")
    _git(root, "gc", "-q")  # packed, like a real clone
    for d in range(10):  # a realistic working tree: uncommitted edits and untracked files
        (root / f"pkg{d:04d}" / "mod000.py").write_text("# edited\n")
        (root / f"pkg{d:04d}" / "new.py").write_text("# untracked\n")
    # ... and ignored ones, which a view hides (a whiteout each): a secret, build outputs, a
    # bytecode cache and a log per package, and an environment (seen, not hidden).
    (root / ".env").write_text("TOKEN=x\n")
    (root / ".venv").mkdir()
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    for n in range(0, files, per_dir):
        pkg = root / f"pkg{n // per_dir:04d}"
        (pkg / "__pycache__").mkdir()
        (pkg / "__pycache__" / "mod000.cpython-311.pyc").write_bytes(b"\0" * 64)
        (pkg / "run.log").write_text("log\n")
        out = root / "build" / pkg.name
        out.mkdir(parents=True)
        (out / "mod000.js").write_text("x\n")


def _disk(root: Path) -> int:
    """Bytes allocated below ``root`` on its own file system (a mounted view is not counted)."""
    dev = root.stat().st_dev
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if os.lstat(os.path.join(dirpath, d)).st_dev == dev]
        for name in filenames:
            total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


def _asked(strategy: str) -> str:
    """What to ask for to get ``strategy`` (``fuse-overlay`` is the view without root)."""
    return "overlay" if strategy == "fuse-overlay" else strategy


async def _strategy(src: Path, base: Path, strategy: str) -> dict[str, float]:
    t0 = time.perf_counter()
    scratch = await ScratchWorkspace.create(src, base_dir=base, strategy=_asked(strategy))
    start = time.perf_counter() - t0
    try:  # a failed round still unmounts its view and removes its scratch
        assert scratch.strategy == strategy, (strategy, scratch.strategy, scratch.fallback_reason)
        for d in range(10):  # the agent edits a few files
            (scratch.path / f"pkg{d:04d}" / "mod001.py").write_text("# agent\n")
        t0 = time.perf_counter()
        changes = await scratch.changes()
        changed = time.perf_counter() - t0
        assert len(changes) == 10, changes
        disk = await asyncio.to_thread(_disk, next(base.iterdir()))
    finally:
        t0 = time.perf_counter()
        await scratch.aclose()
        closed = time.perf_counter() - t0
    run = await _run_start(src, base, strategy)
    return {"start": start, "changes": changed, "disk": disk, "close": closed, "run": run}


async def _run_start(src: Path, base: Path, strategy: str) -> float:
    """Seconds from ``execute_run`` until the scripted model holds the run's first request."""
    async with ScriptedModelServer([Turn(text="done")]) as model:
        environ = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp"),
            "OPENAI_API_KEY": "bench",
            "OPENAI_BASE_URL": model.openai_base_url,
            "OPENAI_MODEL": "scripted",
        }
        env = load_environment(cwd=src, environ=environ)
        old = {k: os.environ.get(k) for k in (STRATEGY_VAR, "TMPDIR")}
        os.environ[STRATEGY_VAR], os.environ["TMPDIR"] = _asked(strategy), str(base)
        tempfile.tempdir = None  # re-read TMPDIR: the run's scratch goes under ``base``

        async def noop(_event: object) -> None:
            return None

        try:
            t0 = time.perf_counter()
            run = asyncio.ensure_future(
                execute_run(
                    RunSpec(task="t", workspace=src, review=True, diagnostics=False),
                    env=env,
                    on_event=noop,
                )
            )
            while not model.requests and not run.done():
                await asyncio.sleep(0.002)
            started = time.perf_counter() - t0
            report = await run
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            tempfile.tempdir = None
        if report.scratch is not None:
            await report.scratch.aclose()
        assert report.scratch is None or report.scratch.strategy == strategy
    return started


async def _worktree_add(src: Path, base: Path) -> dict[str, float]:
    dst = base / "driveros-bench-wt"
    t0 = time.perf_counter()
    await asyncio.to_thread(_git, src, "worktree", "add", "--detach", "-q", str(dst), "HEAD")
    start = time.perf_counter() - t0
    disk = await asyncio.to_thread(_disk, dst)
    await asyncio.to_thread(shutil.rmtree, dst)
    await asyncio.to_thread(_git, src, "worktree", "prune")
    return {"start": start, "disk": disk}


async def _copytree(src: Path, base: Path) -> dict[str, float]:
    dst = base / "driveros-bench-copy"
    t0 = time.perf_counter()
    await asyncio.to_thread(shutil.copytree, src, dst, symlinks=True)
    start = time.perf_counter() - t0
    disk = await asyncio.to_thread(_disk, dst)
    subprocess.run(["rm", "-rf", str(dst)], check=True)
    return {"start": start, "disk": disk}


def _median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


async def _bench_size(root: Path, files: int, strategies: list[str]) -> list[Row]:
    src = root / f"repo{files}"
    t0 = time.perf_counter()
    await asyncio.to_thread(_generate, src, files)
    base = root / f"scratch{files}"
    base.mkdir()
    print(f"\n{files} files (generated in {time.perf_counter() - t0:.1f} s), median of {ROUNDS}")
    async with await ScratchWorkspace.create(src, base_dir=base, strategy="auto") as auto:
        print(f"  auto picks {auto.strategy} for this repository")
    results: dict[str, list[dict[str, float]]] = {k: [] for k in [*strategies, "wt", "cp"]}
    # Interleaved rounds, so a burst of load on the shared machine hits every side alike.
    for _ in range(ROUNDS):
        results["wt"].append(await _worktree_add(src, base))
        results["cp"].append(await _copytree(src, base))
        for s in strategies:
            results[s].append(await _strategy(src, base, s))
    ref = _median(results["wt"], "start")
    rows = [
        ("git worktree add", results["wt"]),
        ("shutil.copytree", results["cp"]),
        *((f"scratch: {s}", results[s]) for s in strategies),
    ]
    for label, runs in rows:
        start = _median(runs, "start")
        line = (
            f"  {label:<20} start {start * 1000:8.1f} ms  x{start / ref:5.2f} of worktree add"
            f"   disk {_median(runs, 'disk') / 1e6:8.2f} MB"
        )
        if "changes" in runs[0]:
            line += f"   changes() {_median(runs, 'changes') * 1000:6.1f} ms"
            run = _median(runs, "run")
            line += f"   run start {run * 1000:8.1f} ms (x{run / ref:5.2f})"
        print(line)
    # The same files in a plain directory (no repository): its view hashes every file for the
    # baseline, in the background of a run.
    plain = root / f"plain{files}"
    await asyncio.to_thread(
        shutil.copytree, src, plain, symlinks=True, ignore=shutil.ignore_patterns(".git")
    )
    for s in (s for s in strategies if s != "worktree"):  # no repository: worktree is copy
        runs = [await _run_start(plain, base, s) for _ in range(ROUNDS)]
        run = statistics.median(runs)
        print(f"  plain directory: {s:<9} run start {run * 1000:8.1f} ms (x{run / ref:5.2f})")
    return _rows(files, strategies, results)


def _rows(
    files: int, strategies: list[str], results: dict[str, list[dict[str, float]]]
) -> list[Row]:
    """The table's rows for one size: the first strategy, the others in its ratio cell."""
    best, wt = strategies[0], results["wt"]
    ref = _median(wt, "start")
    others = ", ".join(f"`{s}` {_median(results[s], 'start') / ref:.2f}" for s in strategies[1:])
    copied = _median(results["cp"], "start") / ref
    name = f"review {{what}}, {files:,} files, `{best}` (`make bench ARGS=review`)"
    start = _median(results[best], "start")
    run = _median(results[best], "run")
    rows = [
        Row(
            benchmark=name.format(what="scratch copy start"),
            measured=f"{start * 1000:.0f} ms",
            baseline=f"{ref * 1000:.0f} ms `git worktree add`",
            ratio=f"{start / ref:.2f} ({others}{', ' if others else ''}`shutil.copytree` "
            f"{copied:.2f})",
        ),
        Row(
            benchmark=name.format(what="disk written per run"),
            measured=f"{_median(results[best], 'disk') / 1e6:.2f} MB",
            baseline=f"{_median(wt, 'disk') / 1e6:.0f} MB `git worktree add`",
            ratio=ratio(_median(results[best], "disk"), _median(wt, "disk")),
        ),
        Row(
            benchmark=name.format(
                what="run start (`execute_run` until the model has its first request)"
            ),
            measured=f"{run * 1000:.0f} ms",
            baseline=f"{ref * 1000:.0f} ms `git worktree add`",
            ratio=ratio(run, ref),
            goal=goal_met("<= 0.2x `git worktree add`", run <= 0.2 * ref),
        ),
    ]
    if "worktree" in results and best != "worktree":
        mine, theirs = _median(results[best], "changes"), _median(results["worktree"], "changes")
        rows.append(
            Row(
                benchmark=name.format(what="`changes()` after ten edits"),
                measured=f"{mine * 1000:.0f} ms",
                baseline=f"{theirs * 1000:.0f} ms `worktree`",
                ratio=ratio(mine, theirs),
            )
        )
    return rows


async def main() -> None:
    probe = scratch_strategies()
    wanted = os.environ.get(_STRATEGIES_VAR, "overlay,fuse-overlay,worktree,copy").split(",")
    names = ("overlay", "fuse-overlay", "worktree", "copy")
    usable = [s for s in names if probe.get(s, "") is None and s in wanted]
    for name, why in probe.items():
        print(f"strategy {name:<9} {'available' if why is None else 'unavailable: ' + why}")
    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
        root = Path(tmp)
        # One run first, on a tiny repository: the first run in a process pays the imports
        # (the same for any repository), which is not what this measures.
        warm = root / "warm"
        await asyncio.to_thread(_generate, warm, 1000)
        (root / "warm-scratch").mkdir()
        await _run_start(warm, root / "warm-scratch", usable[0])
        rows = [row for files in _sizes() for row in await _bench_size(root, files, usable)]
    report("review", rows)


if __name__ == "__main__":
    asyncio.run(main())
