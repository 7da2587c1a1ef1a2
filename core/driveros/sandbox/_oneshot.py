"""A local sandbox that discards its writes: the one-shot feed over the user's own tree.

``driveros agent --fix`` (finding its targets) and the language server's
``publishDiagnostics`` run the diagnostics feed once on the user's real workspace, not on a
run's scratch view; the feed runs the repository's code (a ``conftest.py``, a declared test
command). Such a sandbox (``LocalSandbox(ws, discard_writes=True)``) never lets a command
change the tree (docs/sandbox.md, "Sandboxes that discard their writes"):

- ``overlay``: the workspace is an overlay whose lower layer is the tree itself and whose
  upper layer is a tmpfs of the sandbox's own mount namespace (``_overlay_inner.py`` lays it,
  then becomes bubblewrap): commands write as usual (caches, build outputs, a test's files)
  and everything is gone when the sandbox ends;
- ``read-only``: where the kernel refuses that overlay (no overlay in a user namespace, an
  unusual filesystem, a path overlayfs cannot name), the workspace is bound read-only and
  build caches go to the private TMPDIR.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Literal

#: How a sandbox lets its commands at the workspace.
WorkspaceAccess = Literal["writable", "overlay", "read-only"]

_SOURCE = Path(__file__).with_name("_overlay_inner.py")
#: The helper's interpreter: ours, symlinks resolved (it runs on the host, before bwrap).
_INTERPRETER = os.path.realpath(sys.executable)
#: Characters overlayfs' mount options cannot carry in a layer's path.
_UNNAMEABLE = frozenset(",:\\\n")
#: The size of each tmpfs a sandbox writes to (``/tmp``, ...): a command that fills one gets
#: ENOSPC instead of taking the machine's memory.
TMPFS_BYTES = 2 << 30
#: The most a sandbox that discards its writes holds in memory, every place it writes together
#: (see :func:`one_shot_bytes`).
ONE_SHOT_MAX_BYTES = 1 << 30
#: ... and at most this share of the memory available when it starts (never below the floor).
ONE_SHOT_MEMORY_SHARE = 4
ONE_SHOT_MIN_BYTES = 64 << 20
#: The directories of the one tmpfs (under the sandbox's private directory, whose ``home``
#: and ``tmp`` are HOME and TMPDIR) bubblewrap binds at the system's scratch places.
SHARED_PLACES = {
    "/tmp": "sys-tmp",  # noqa: S108 - the sandbox's own, never the host's
    "/var/tmp": "var-tmp",  # noqa: S108
    "/run": "run",
    "/dev/shm": "shm",  # noqa: S108
}
_SHARED_DIRS = ":".join(["home", "tmp", *SHARED_PLACES.values()])


def one_shot_bytes(limit: int) -> int:
    """The size of the one tmpfs that holds everything a sandbox that discards its writes
    writes: at most ``limit`` (``tmpfs_bytes``), :data:`ONE_SHOT_MAX_BYTES` and a quarter of
    ``MemAvailable`` (not below :data:`ONE_SHOT_MIN_BYTES` unless ``limit`` is). Blocking."""
    cap = min(limit, ONE_SHOT_MAX_BYTES)
    available = _mem_available()
    if available is not None:
        cap = min(cap, max(available // ONE_SHOT_MEMORY_SHARE, ONE_SHOT_MIN_BYTES))
    return cap


def _mem_available() -> int | None:
    try:
        text = Path("/proc/meminfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        fields = value.split()
        if name == "MemAvailable" and fields and fields[0].isdigit():
            return int(fields[0]) * 1024
    return None


def _prefix(workspace: str, scratch: Path, size: int) -> list[str]:
    source = _SOURCE.read_text(encoding="utf-8")
    args = [workspace, str(scratch), str(size), _SHARED_DIRS]
    return [_INTERPRETER, "-I", "-S", "-c", source, *args]


def overlay_prefix(workspace: Path, scratch: Path, size: int = TMPFS_BYTES) -> list[str] | None:
    """The command that mounts one tmpfs of ``size`` bytes at ``scratch`` (the sandbox's
    private directory: HOME, TMPDIR, the system's scratch places and the upper layer all on
    it), lays the throwaway overlay over ``workspace`` and then runs the bubblewrap command
    appended to it; None when overlayfs cannot name one of the paths."""
    if any(c in _UNNAMEABLE for c in f"{workspace}{scratch}"):
        return None
    return _prefix(str(workspace), scratch, size)


def scratch_prefix(scratch: Path, size: int) -> list[str]:
    """As :func:`overlay_prefix` without the overlay (the read-only fallback): only the one
    tmpfs of ``size`` bytes at ``scratch`` for everything the sandbox writes."""
    return _prefix("-", scratch, size)


@functools.cache
def overlay_works() -> bool:
    """Whether this machine lays the overlay for an unprivileged user namespace (once per
    process: the helper over a temporary directory, running ``/bin/true``). Blocking."""
    with tempfile.TemporaryDirectory(prefix="driveros-ovl-probe-") as base:
        lower, scratch = Path(base, "lower"), Path(base, "scratch")
        lower.mkdir()
        scratch.mkdir()
        prefix = overlay_prefix(lower, scratch)
        if prefix is None:
            return False
        try:
            done = subprocess.run(
                [*prefix, "/bin/true"], capture_output=True, timeout=10, check=False, env={}
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        return done.returncode == 0


def read_only_env(tmp: Path) -> dict[str, str]:
    """What tools that write caches beside the sources get in a read-only workspace: their
    caches in the private TMPDIR (the feed's own checks already put theirs there)."""
    return {
        "PYTHONDONTWRITEBYTECODE": "1",
        "CARGO_TARGET_DIR": str(tmp / "cargo-target"),
    }
