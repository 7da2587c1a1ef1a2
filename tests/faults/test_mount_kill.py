"""Row 9 of issue 28: a kill -9 during scratch creation leaves no mount made after its owner
died. A process makes an overlay view and is killed at a random moment of it, or the moment a
mount helper (``mount``, ``fuse-overlayfs``) appears; a helper found then is frozen until the
owner is gone (a loaded machine: the issue saw one mount 1.5 s late). No mount may appear
after the owner died, and after ``collect_garbage`` nothing may be mounted under the scratch
directory nor over the repository."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import sys
from pathlib import Path

import pytest

from driveros.review._overlay import overlay_probe
from driveros.state import collect_garbage, list_leases, mounts_under
from tests.review._repo import make_repo, views_of

TRIALS = 12
_HOLD = """
import asyncio, sys
from pathlib import Path
from driveros.review import ScratchWorkspace

async def main() -> None:
    print("go", flush=True)
    await ScratchWorkspace.create(Path(sys.argv[1]), base_dir=Path(sys.argv[2]), strategy="overlay")
    print("ready", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""
_HELPERS = {"mount", "fuse-overlayfs", "fusermount", "fusermount3", "setpriv"}


def _children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                out += [int(p) for p in fh.read().split()]
    return out


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _helpers_of(pid: int) -> list[int]:
    return [c for c in _children(pid) if _comm(c) in _HELPERS]


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True


async def _trial(repo: Path, base: Path, rng: random.Random) -> list[str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _HOLD, str(repo), str(base), stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    assert await proc.stdout.readline() == b"go\n"
    at_helper = rng.random() < 0.5
    deadline = asyncio.get_running_loop().time() + rng.uniform(0.0, 0.4)
    frozen: list[int] = []
    while asyncio.get_running_loop().time() < deadline or at_helper:
        helpers = _helpers_of(proc.pid)
        if helpers:
            for pid in helpers:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGSTOP)
            frozen = helpers
            break
        if proc.returncode is not None or await _ready(proc):
            break
        await asyncio.sleep(0.001)
    proc.kill()
    await proc.wait()
    at_death = set(mounts_under(base))
    for pid in frozen:  # the helper goes on, as on a loaded machine
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGCONT)
    async with asyncio.timeout(10):
        while not all(_gone(p) for p in frozen):
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    late = sorted(set(mounts_under(base)) - at_death)  # made after the owner died
    await collect_garbage()  # the next start's cleanup
    return late + mounts_under(base) + views_of(repo)


async def _ready(proc: asyncio.subprocess.Process) -> bool:
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 0.0005)
    except TimeoutError:
        return False
    return line == b"ready\n"


@pytest.mark.skipif(overlay_probe() is not None, reason="no overlay view on this machine")
async def test_kill_during_scratch_creation_leaves_no_late_mount(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "ws", {f"f{i}.py": f"X = {i}\n" for i in range(50)})
    base = tmp_path / "scratch"
    base.mkdir()
    rng = random.Random(28)
    leftovers = [
        (trial, left) for trial in range(TRIALS) if (left := await _trial(repo, base, rng))
    ]
    assert leftovers == []
    assert await list_leases() == []
    assert sorted(os.listdir(base)) == []
