"""Scratch start-up per strategy on generated git repositories, against worktree add and a copy.

For each size (default 1k and 10k files; ``BENCH_REVIEW_SIZES=1000,10000,100000`` for more;
``BENCH_REVIEW_STRATEGIES=overlay`` and ``BENCH_REVIEW_ROUNDS=1`` to keep a 100k run short)
and in one run, side by side: ``ScratchWorkspace.create`` with every strategy available on
this machine (``overlay``: a copy-on-write view, ``worktree``, ``copy``), a bare
``git worktree add`` of the same repository and ``shutil.copytree`` of it (the references).
Reports medians in ms, the ratio to ``git worktree add`` (issue 19's goal: overlay <= 0.2 at
10k files), the disk each run wrote (blocks under the scratch directory, the view's mount
excluded) and ``changes()`` after ten edits. Also prints the probe and what ``auto`` picks.
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

from driveros.review import ScratchWorkspace, scratch_strategies

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
    (root / ".gitignore").write_text("*.log\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "gc.auto", "0")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-qm", "init")
    _git(root, "gc", "-q")  # packed, like a real clone
    for d in range(10):  # a realistic working tree: uncommitted edits and untracked files
        (root / f"pkg{d:04d}" / "mod000.py").write_text("# edited\n")
        (root / f"pkg{d:04d}" / "new.py").write_text("# untracked\n")


def _disk(root: Path) -> int:
    """Bytes allocated below ``root`` on its own file system (a mounted view is not counted)."""
    dev = root.stat().st_dev
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if os.lstat(os.path.join(dirpath, d)).st_dev == dev]
        for name in filenames:
            total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


async def _strategy(src: Path, base: Path, strategy: str) -> dict[str, float]:
    t0 = time.perf_counter()
    scratch = await ScratchWorkspace.create(src, base_dir=base, strategy=strategy)
    start = time.perf_counter() - t0
    assert scratch.strategy == strategy, (strategy, scratch.strategy, scratch.fallback_reason)
    for d in range(10):  # the agent edits a few files
        (scratch.path / f"pkg{d:04d}" / "mod001.py").write_text("# agent\n")
    t0 = time.perf_counter()
    changes = await scratch.changes()
    changed = time.perf_counter() - t0
    assert len(changes) == 10, changes
    disk = await asyncio.to_thread(_disk, next(base.iterdir()))
    t0 = time.perf_counter()
    await scratch.aclose()
    return {"start": start, "changes": changed, "disk": disk, "close": time.perf_counter() - t0}


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


async def _bench_size(root: Path, files: int, strategies: list[str]) -> None:
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
        print(line)


async def main() -> None:
    probe = scratch_strategies()
    wanted = os.environ.get(_STRATEGIES_VAR, "overlay,worktree,copy").split(",")
    usable = [s for s in ("overlay", "worktree", "copy") if probe[s] is None and s in wanted]
    for name, why in probe.items():
        print(f"strategy {name:<9} {'available' if why is None else 'unavailable: ' + why}")
    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
        root = Path(tmp)
        for files in _sizes():
            await _bench_size(root, files, usable)


if __name__ == "__main__":
    asyncio.run(main())
