"""The one-shot feed sandbox (``LocalSandbox(ws, discard_writes=True)``) attacked the way a
hostile ``conftest.py`` or declared build command would: through a file hard-linked from
outside the tree, set-id bits, device nodes, extended attributes, mtimes, a descriptor opened
before a rename, a directory swapped for a symlink, and by filling every place it may write.
The user's tree (contents, modes, mtimes, extended attributes) and the file outside it stay
as they were, in the overlay and the read-only fallback; nothing a command writes reaches
the host's disk, and a full tmpfs is a command's ENOSPC, never a driveros error.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from driveros.intel import DiagnosticsFeed
from driveros.sandbox import LocalSandbox
from tests.security._oneshot import access as access  # the fixture
from tests.security._oneshot import fill_command, fill_conftest, hostile_repo

ENV = {
    "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
}
#: A small tmpfs for the tests (the default is 2 GiB).
SMALL = 8 << 20
#: Every place a command in the sandbox may write, besides the workspace.
SCRATCH_PLACES = ("$TMPDIR", "$HOME", "/tmp", "/var/tmp", "/run", "/dev/shm", "/dev")

ATTACK = r"""
import os, subprocess
def attempt(action):
    try:
        action()
    except Exception as exc:
        print("refused:", exc)
try:
    fd = os.open("data.txt", os.O_WRONLY | os.O_APPEND)
except OSError:
    fd = os.open("data.txt", os.O_RDONLY)  # read-only: a descriptor all the same
attempt(lambda: os.rename("data.txt", "moved.txt"))
attempt(lambda: os.write(os.open(f"/proc/self/fd/{fd}", os.O_WRONLY | os.O_APPEND), b"fd\n"))
attempt(lambda: os.write(fd, b"direct\n"))
attempt(lambda: open("linked.txt", "a").write("through the hard link\n"))
attempt(lambda: os.chmod("linked.txt", 0o4777))
attempt(lambda: os.chmod("run.sh", 0o6755))
attempt(lambda: os.utime("notes.txt", (0, 0)))
attempt(lambda: os.setxattr("notes.txt", "user.planted", b"1"))
attempt(lambda: os.setxattr(".", "user.overlay.opaque", b"y"))
attempt(lambda: os.mknod("null2", stat.S_IFCHR | 0o666, os.makedev(1, 3)))
attempt(lambda: os.rename("src", "src.old"))
attempt(lambda: os.symlink("/tmp", "src"))
attempt(lambda: open("src/x.py", "w").write("x = 1\n"))
attempt(lambda: os.truncate("notes.txt", 0))
attempt(lambda: os.link("notes.txt", "notes2.txt"))
attempt(lambda: subprocess.run(["unshare", "-rm", "sh", "-c",
    "mount -t tmpfs none . && echo x > calc.py; mount -o remount,rw,bind . ; echo y >> calc.py"]))
"""
ATTACK = "import stat\n" + ATTACK


def _state(root: Path) -> dict[str, tuple[object, ...]]:
    """Every entry below ``root``: kind and mode, content or link target, mtime and
    extended attributes (no link followed)."""
    found: dict[str, tuple[object, ...]] = {}
    for top, dirs, files in os.walk(root):
        for name in [".", *dirs, *files]:
            path = Path(top, name)
            info = path.lstat()
            body: object = ""
            if stat.S_ISLNK(info.st_mode):
                body = os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                body = path.read_bytes()
            try:
                attrs = sorted(os.listxattr(path, follow_symlinks=False))
            except OSError:
                attrs = []
            found[str(path.relative_to(root))] = (info.st_mode, body, info.st_mtime_ns, attrs)
    return found


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    repo = hostile_repo(tmp_path / "repo")
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's file outside the tree\n")
    os.link(outside, repo / "linked.txt")
    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "src").mkdir()
    (repo / "src" / "x.py").write_text("x = 0\n")
    (repo / "attack.py").write_text(ATTACK)
    return repo, outside


async def test_oneshot_attack_the_tree_and_a_hard_linked_file_outside_stay(
    tmp_path: Path, access: str
) -> None:
    repo, outside = _repo(tmp_path)
    before, outside_before = _state(repo), (outside.read_bytes(), outside.stat().st_mode)
    async with LocalSandbox(repo, base_env=ENV, discard_writes=True) as box:
        await box.start()
        assert box.workspace_access == access
        done = await box.run(f"{sys.executable} attack.py")
        assert done.exit_code == 0, done.stdout + done.stderr
    assert (outside.read_bytes(), outside.stat().st_mode) == outside_before
    after = _state(repo)
    assert [k for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)] == []


def _disk_bytes(root: str) -> int:
    total = 0
    for top, _, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(top, name)).st_blocks * 512
            except OSError:
                pass
    return total


async def test_oneshot_attack_filling_every_tmpfs_fails_cleanly_off_the_host_disk(
    tmp_path: Path, access: str
) -> None:
    repo, _ = _repo(tmp_path)
    async with LocalSandbox(repo, base_env=ENV, discard_writes=True, tmpfs_bytes=SMALL) as box:
        done = await box.run(fill_command(8 * SMALL, SCRATCH_PLACES))
        written = dict(line.split() for line in done.stdout.splitlines())
        assert set(written) == {".", *SCRATCH_PLACES}, done.stdout + done.stderr
        for place, size in written.items():
            assert int(size) <= SMALL, (place, size)  # ENOSPC (or EROFS), never more
        assert int(written["$HOME"]) + int(written["$TMPDIR"]) <= SMALL  # one tmpfs for both
        assert box._scratch is not None
        assert _disk_bytes(box._scratch) < SMALL  # nothing landed on the host's disk
        again = await box.run("echo alive")
        assert again.stdout == "alive\n"
    assert not (repo / "fill.bin").exists()


async def test_oneshot_attack_a_conftest_filling_the_tmpfs_still_gives_a_snapshot(
    tmp_path: Path, access: str
) -> None:
    """The feed's pytest imports a conftest that fills every place it can write: the
    snapshot comes back (pytest's own failure is a diagnostic), with no driveros error."""
    repo, _ = _repo(tmp_path)
    (repo / "conftest.py").write_text(fill_conftest(SCRATCH_PLACES))
    async with LocalSandbox(repo, base_env=ENV, discard_writes=True, tmpfs_bytes=SMALL) as box:
        snapshot = await DiagnosticsFeed(box).snapshot()
        assert "pytest" in snapshot.checks
        assert box._scratch is not None
        assert _disk_bytes(box._scratch) < SMALL
    assert not (repo / "fill.bin").exists()
