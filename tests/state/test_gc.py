"""driveros.state: leases, owners, and garbage collection of what dead processes left."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from driveros.state import Lease, Owner, collect_garbage, kept_leases, list_leases, state_dir
from driveros.state import _gc as gc_module
from tests.review._repo import make_repo, scratch_copies

_HOLD = """
import asyncio, sys
from pathlib import Path
from typing import Any
from driveros.review import ScratchWorkspace

async def main() -> None:
    await ScratchWorkspace.create(Path(sys.argv[1]), base_dir=Path(sys.argv[2]))
    print("ready", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


async def _killed_owner(repo: Path, base: Path) -> int:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _HOLD, str(repo), str(base), stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    assert await proc.stdout.readline() == b"ready\n"
    proc.send_signal(signal.SIGKILL)
    await proc.wait()
    return proc.pid


def test_state_dir_follows_the_environment(tmp_path: Path) -> None:
    assert state_dir({"DRIVEROS_STATE_DIR": str(tmp_path)}) == tmp_path
    assert state_dir({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "driveros"
    assert state_dir({}) == Path.home() / ".local" / "state" / "driveros"


def test_owner_current_is_alive_and_a_reused_pid_is_not() -> None:
    me = Owner.current()
    assert me.alive()
    assert not Owner(pid=me.pid, start="1", boot=me.boot, host=me.host).alive()
    assert not Owner(pid=me.pid, start=me.start, boot="another-boot", host=me.host).alive()
    # Another host's processes cannot be seen: never collected.
    assert Owner(pid=me.pid, start="1", boot="x", host="elsewhere.invalid").alive()


async def test_gc_removes_scratch_copy_of_killed_process(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"a.py": "A = 1\n"})
    base = tmp_path / "scratch"
    base.mkdir()
    pid = await _killed_owner(repo, base)
    assert len(scratch_copies(repo)) == 1  # a worktree or a still-mounted view
    assert len(list(base.iterdir())) == 1

    report = await collect_garbage()

    assert [(c.kind, c.owner_pid, c.reason, c.repo) for c in report.removed] == [
        ("scratch", pid, "owner_gone", str(repo))
    ]
    assert report.errors == []
    assert scratch_copies(repo) == []
    assert list(base.iterdir()) == []
    assert await list_leases() == []
    assert (await collect_garbage()).removed == []


async def test_gc_leaves_live_owners_alone(tmp_path: Path) -> None:
    target = tmp_path / "driveros-cache-x"
    target.mkdir()
    lease = await Lease.create("cache", paths=[target])
    assert (await collect_garbage()).removed == []
    assert target.is_dir()
    await lease.release()
    assert not target.exists()
    assert await list_leases() == []


async def _dead_lease(kind: str, paths: list[Path], *, keep: bool = False) -> Lease:
    lease = await Lease.create(kind, paths=paths)
    if keep:
        await lease.keep({"run": "r1"})
    record = lease.record.model_dump(mode="json")
    record["owner"] = {**record["owner"], "start": "0"}  # a pid reused by someone else
    lease.file.write_text(json.dumps(record))
    return lease


async def test_gc_refuses_paths_it_does_not_own(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    lease = await _dead_lease("cache", [precious])
    report = await collect_garbage()
    assert precious.is_dir()
    assert [c.paths for c in report.removed] == [[]]
    assert report.errors == [
        f"lease {lease.id}: not removing {str(precious)!r} (not a driveros path)"
    ]


async def test_gc_ignores_garbage_lease_files(tmp_path: Path) -> None:
    folder = state_dir() / "leases"
    folder.mkdir(parents=True)
    (folder / "0123456789abcdef.json").write_text("{not json")
    (folder / "fedcba9876543210.json").write_text(json.dumps({"id": "../../etc", "kind": 1}))
    report = await collect_garbage()
    assert report.removed == [] and report.errors == []


async def test_gc_keeps_kept_leases_until_max_age(tmp_path: Path) -> None:
    target = tmp_path / "driveros-kept"
    target.mkdir()
    await _dead_lease("scratch", [target], keep=True)
    assert (await collect_garbage()).removed == []
    assert [k.record.kept.manifest for k in await kept_leases("scratch") if k.record.kept] == [
        {"run": "r1"}
    ]
    assert target.is_dir()
    report = await collect_garbage(max_kept_age=0.0)
    assert [c.reason for c in report.removed] == ["expired"]
    assert not target.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root (as in CI)")
async def test_gc_unmounts_a_kept_lease_nobody_owns_and_keeps_its_files(tmp_path: Path) -> None:
    from driveros.state import mounts_under

    root = tmp_path / "driveros-scratch-k"
    point, volatile = root / "view", tmp_path / "driveros-hide-k"
    point.mkdir(parents=True)
    volatile.mkdir()
    (root / "upper.txt").write_text("the proposal")
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(point)], check=True)
    lease = await Lease.create("scratch", paths=[root, volatile])
    await lease.keep({"run": "r1"}, volatile=[volatile])
    assert (await collect_garbage()).unmounted == []  # its owner (this process) lives
    assert mounts_under(root) == [str(point)]

    record = lease.record.model_dump(mode="json")
    record["owner"] = {**record["owner"], "start": "0"}  # a pid reused by someone else
    lease.file.write_text(json.dumps(record))
    report = await collect_garbage()
    assert (report.removed, report.unmounted, report.errors) == ([], [str(point)], [])
    assert "unmounted 1 kept proposal view" in report.summary()
    assert mounts_under(root) == [] and not volatile.exists()
    assert (root / "upper.txt").read_text() == "the proposal"
    assert [k.id for k in await kept_leases("scratch")] == [lease.id]
    assert (await collect_garbage()).unmounted == []  # nothing left to let go of


async def test_gc_stops_a_dead_owners_mount_helper_before_removing(tmp_path: Path) -> None:
    root = tmp_path / "driveros-scratch-h"
    root.mkdir()
    helper = tmp_path / "bin" / "mount"  # what a killed owner's `mount` child looks like
    helper.parent.mkdir()
    helper.write_text("#!/bin/sh\nwhile :; do sleep 0.05; done\n")
    helper.chmod(0o755)
    proc = subprocess.Popen([str(helper), f"upperdir={root}/upper"])
    try:
        await _dead_lease("scratch", [root])
        report = await collect_garbage()
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert ([c.reason for c in report.removed], report.errors) == (["owner_gone"], [])
    assert not root.exists()


async def test_gc_never_stops_a_helper_for_a_path_it_does_not_own(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    helper = tmp_path / "bin" / "mount"
    helper.parent.mkdir()
    helper.write_text("#!/bin/sh\nwhile :; do sleep 0.05; done\n")
    helper.chmod(0o755)
    proc = subprocess.Popen([str(helper), f"upperdir={precious}/upper"])
    try:
        await _dead_lease("cache", [precious])
        await collect_garbage()
        assert proc.poll() is None  # a record naming someone else's path stops nothing
    finally:
        proc.kill()
        proc.wait()
    assert precious.is_dir()


async def test_gc_busy_when_another_process_collects(tmp_path: Path) -> None:
    import fcntl

    where = state_dir()
    where.mkdir(parents=True, exist_ok=True)
    fd = os.open(where / "gc.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert (await collect_garbage()).busy
    finally:
        os.close(fd)
    assert not (await collect_garbage()).busy


async def test_unusable_state_dir_still_gives_working_scratch_copies(
    tmp_path: Path, monkeypatch: Any
) -> None:
    from driveros.review import ScratchWorkspace

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("DRIVEROS_STATE_DIR", str(blocker / "state"))  # cannot be created
    repo = make_repo(tmp_path / "proj", {"a.py": "A = 1\n"})
    async with await ScratchWorkspace.create(repo, base_dir=tmp_path) as scratch:
        (scratch.path / "a.py").write_text("A = 2\n")
        assert [c.path for c in await scratch.changes()] == ["a.py"]
    assert scratch_copies(repo) == []
    assert not scratch.path.exists()
    assert (await collect_garbage()).removed == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root (as in CI)")
async def test_remove_paths_unmounts_first_and_never_crosses_a_mount(tmp_path: Path) -> None:
    from driveros.state import mounts_under, remove_paths

    root = tmp_path / "driveros-scratch-x"
    point = root / "a dir\twith\\odd names"
    point.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(point)], check=True)
    (point / "inside.txt").write_text("x")
    assert mounts_under(root) == [str(point)]
    assert await remove_paths([str(root)]) == []
    assert mounts_under(root) == []
    assert not root.exists()


async def test_a_canceled_collection_does_not_keep_the_gc_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = gc_module._try_lock
    locking = asyncio.Event()
    loop = asyncio.get_running_loop()

    def slow_lock(path: Path) -> int | None:
        loop.call_soon_threadsafe(locking.set)
        time.sleep(0.3)  # the lock is taken after the caller was canceled
        return real(path)

    monkeypatch.setattr(gc_module, "_try_lock", slow_lock)
    collecting = asyncio.create_task(collect_garbage(state=tmp_path))
    await locking.wait()
    collecting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await collecting
    await asyncio.sleep(0.5)  # long enough for a thread left running to take the lock
    monkeypatch.setattr(gc_module, "_try_lock", real)
    # Was: the descriptor holding the lock left open, every later collection "busy".
    assert not (await collect_garbage(state=tmp_path)).busy
