"""Scratch-copy start-up on a generated 10k-file git repository, against a plain copy.

Side by side in one run: ``ScratchWorkspace.create`` (git worktree + dirty/untracked files +
baseline) and, for a non-git directory of the same files, the .gitignore-honouring copy;
both against ``shutil.copytree`` of the same tree (the naive way to get a scratch copy).
Reports medians in ms and the ratio scratch / copytree (lower is better); also the time
``changes()`` takes after ten edits, next to one ``git status`` of the same worktree.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from driveros.review import ScratchWorkspace

DIRS, FILES_PER_DIR, ROUNDS = 100, 100, 3


def _generate(root: Path, *, git: bool) -> None:
    body = "".join(f"value_{i} = {i}\n" for i in range(40))
    for d in range(DIRS):
        pkg = root / f"pkg{d:03d}"
        pkg.mkdir(parents=True)
        for f in range(FILES_PER_DIR):
            (pkg / f"mod{f:03d}.py").write_text(f"# module {d}.{f}\n{body}")
    (root / ".gitignore").write_text("*.log\n")
    if not git:
        return
    run = lambda *a: subprocess.run(["git", "-C", str(root), *a], check=True, capture_output=True)  # noqa: E731
    run("init", "-q", "-b", "main")
    run("config", "gc.auto", "0")
    run("add", "-A")
    run("-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qm", "init")
    run("gc", "-q")  # packed, like a real clone (and no background auto-gc during the run)
    # A realistic working tree: a few uncommitted edits and untracked files.
    for d in range(10):
        (root / f"pkg{d:03d}" / "mod000.py").write_text("# edited\n")
        (root / f"pkg{d:03d}" / "new.py").write_text("# untracked\n")


async def _bench(label: str, src: Path, base: Path) -> None:
    scratch_t: list[float] = []
    copy_t: list[float] = []
    close_t: list[float] = []
    changes_t: list[float] = []
    status_t: list[float] = []
    # Interleaved rounds, so a burst of load on the machine hits both sides alike.
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        scratch = await ScratchWorkspace.create(src, base_dir=base)
        scratch_t.append(time.perf_counter() - t0)
        for d in range(10):  # the agent edits a few files
            (scratch.path / f"pkg{d:03d}" / "mod001.py").write_text("# agent\n")
        t0 = time.perf_counter()
        changes = await scratch.changes()
        changes_t.append(time.perf_counter() - t0)
        assert len(changes) == 10
        if scratch.is_worktree:  # the reference: one `git status` of the same worktree
            t0 = time.perf_counter()
            subprocess.run(
                ["git", "status", "--porcelain"], cwd=scratch.path, capture_output=True, check=True
            )
            status_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await scratch.aclose()
        close_t.append(time.perf_counter() - t0)

        dst = Path(tempfile.mkdtemp(dir=base)) / "copy"
        t0 = time.perf_counter()
        await asyncio.to_thread(shutil.copytree, src, dst, symlinks=True)
        copy_t.append(time.perf_counter() - t0)
        subprocess.run(["rm", "-rf", str(dst.parent)], check=True)
    scratch_ms, copy_ms, close_ms, changes_ms = (
        statistics.median(t) * 1000 for t in (scratch_t, copy_t, close_t, changes_t)
    )
    print(
        f"{label:<28} start-up: scratch {scratch_ms:7.1f} ms   copytree {copy_ms:7.1f} ms   "
        f"ratio {scratch_ms / copy_ms:5.2f}   (aclose {close_ms:.1f} ms)"
    )
    line = f"{'':<28} changes() after 10 edits {changes_ms:6.1f} ms"
    if status_t:
        status_ms = statistics.median(status_t) * 1000
        line += f"   git status {status_ms:6.1f} ms   ratio {changes_ms / status_ms:5.2f}"
    print(line)


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
        root = Path(tmp)
        files = DIRS * FILES_PER_DIR
        _generate(root / "repo", git=True)
        _generate(root / "plain", git=False)
        base = root / "scratch"
        base.mkdir()
        print(f"{files} files, median of {ROUNDS} rounds")
        await _bench("git repo (worktree)", root / "repo", base)
        await _bench("plain dir (gitignore copy)", root / "plain", base)


if __name__ == "__main__":
    asyncio.run(main())
