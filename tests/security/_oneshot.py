"""Shared by the one-shot feed tests: a repository whose ``conftest.py`` tries to change the
user's tree while the feed snapshots it, and a fingerprint of a tree (every entry's kind,
mode, content or link target) to compare before and after.

The conftest appends to a file, creates one, deletes one, renames one, chmods one, makes a
directory and a symlink, plants a git hook, writes through ``/proc/self/cwd``, tries a nested
user namespace to unmount or remount the workspace, and leaves a process behind that writes
after the snapshot is over.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from collections.abc import Iterable
from pathlib import Path

import pytest

from driveros.sandbox import _local as local_tier

HOSTILE_CONFTEST = r"""
import os, pathlib, subprocess, sys
here = pathlib.Path(__file__).resolve().parent


def attempt(action):
    try:
        action()
    except Exception:
        pass


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


attempt(lambda: append(here / "calc.py", "# pwned\n"))
attempt(lambda: (here / "planted.py").write_text("PLANTED = 1\n"))
attempt(lambda: (here / "victim.txt").unlink())
attempt(lambda: os.chmod(here / "notes.txt", 0o777))
attempt(lambda: os.rename(here / "data.txt", here / "data-moved.txt"))
attempt(lambda: os.mkdir(here / "newdir"))
attempt(lambda: os.symlink("/etc/passwd", here / "link"))
attempt(lambda: (here / ".git" / "hooks" / "post-checkout").write_text("#!/bin/sh\nid\n"))
attempt(lambda: append("/proc/self/cwd/notes.txt", "through cwd\n"))
# In a child: a user and mount namespace of its own (full capabilities there), where it tries
# to unmount the workspace (to reach what lies under it) or remount it writable, then writes.
NESTED = '''
import ctypes, os, sys
here = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
uid, gid = os.getuid(), os.getgid()
if libc.unshare(0x10000000 | 0x00020000) == 0:
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        try:
            open(f"/proc/self/{name}", "w").write(text)
        except OSError:
            pass
    libc.umount2(here.encode(), 2)
    libc.mount(None, here.encode(), None, 32 | 4096, None)  # MS_REMOUNT | MS_BIND
with open(os.path.join(here, "calc.py"), "a") as f:
    f.write("# through a nested namespace\\n")
'''
attempt(lambda: subprocess.run(
    [sys.executable, "-c", NESTED, str(here)], timeout=10, capture_output=True
))
late = f"sleep 3; echo late >> {here}/calc.py; touch {here}/late.txt"
attempt(lambda: subprocess.Popen(
    ["/bin/sh", "-c", late], start_new_session=True, stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
))
"""

CALC_BAD = "def add(a, b):\n    return a - b\n"
CALC_GOOD = "def add(a, b):\n    return a + b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
#: Seconds the conftest's left-behind process waits before it writes, and a margin.
LATE_WRITE_WAIT = 5.0


def hostile_repo(root: Path, *, calc: str = CALC_BAD) -> Path:
    """A git repository at ``root`` with the hostile conftest committed."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "calc.py").write_text(calc)
    (root / "test_calc.py").write_text(TEST_CALC)
    (root / "conftest.py").write_text(HOSTILE_CONFTEST)
    (root / "notes.txt").write_text("hello\n")
    (root / "victim.txt").write_text("delete me\n")
    (root / "data.txt").write_text("rename me\n")
    (root / ".gitignore").write_text("__pycache__/\n")
    git = ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "initial"], cwd=root, check=True)
    return root


def tree_state(root: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry below ``root`` (``.git`` included, no link followed): kind, mode and a
    hash of the content (a file) or the link's target."""
    found: dict[str, tuple[str, int, str]] = {".": ("dir", root.lstat().st_mode, "")}
    for top, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(top, name)
            info = path.lstat()
            rel = str(path.relative_to(root))
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", info.st_mode, os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                found[rel] = ("dir", info.st_mode, "")
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                found[rel] = ("file", info.st_mode, digest)
    return found


def differences(
    before: dict[str, tuple[str, int, str]], after: dict[str, tuple[str, int, str]]
) -> list[str]:
    """What changed between two :func:`tree_state` fingerprints, for an assertion message."""
    names = sorted(set(before) | set(after))
    return [
        f"{n}: {before.get(n)} -> {after.get(n)}" for n in names if before.get(n) != after.get(n)
    ]


@pytest.fixture(params=["overlay", "read-only"])
def access(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The two ways the local tier discards writes (read-only: no overlay on this kernel)."""
    if request.param == "read-only":
        monkeypatch.setattr(local_tier, "overlay_prefix", lambda *_: None)
    return str(request.param)


def fill_command(each: int, places: Iterable[str]) -> str:
    """A command writing ``each`` bytes into the workspace and each of ``places``, then
    printing each place and the bytes that landed there."""
    lines = []
    for place in (".", *places):
        target = f"{place}/fill.bin"
        lines.append(
            f"head -c {each} /dev/zero > {target} 2>/dev/null; "
            f"echo '{place}' $(stat -c %s {target} 2>/dev/null || echo 0)"
        )
    return "\n".join(lines)


def fill_conftest(places: Iterable[str], each: int | None = None) -> str:
    """A ``conftest.py`` writing ``each`` bytes (None: until it is full) into the workspace
    and each of ``places`` (``$VAR`` expanded), going on past every error."""
    write = (
        "            while True:\n                f.write(bytes(1 << 20))\n"
        if each is None
        else f"            f.write(bytes({each}))\n"
    )
    listed = ", ".join(repr(p) for p in (".", *places))
    return (
        "import os\n"
        f"for place in ({listed}):\n"
        "    try:\n"
        "        with open(os.path.expandvars(place) + '/fill.bin', 'wb') as f:\n"
        f"{write}"
        "    except OSError:\n"
        "        pass\n"
    )
