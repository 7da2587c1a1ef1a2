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
#: The size of each tmpfs such a sandbox writes to (the overlay's upper layer, HOME, TMPDIR,
#: ``/tmp``, ...): a command that fills one gets ENOSPC; nothing reaches the host's disk.
TMPFS_BYTES = 2 << 30


def overlay_prefix(workspace: Path, scratch: Path, size: int = TMPFS_BYTES) -> list[str] | None:
    """The command that lays the throwaway overlay over ``workspace`` (its upper layer on a
    tmpfs of ``size`` bytes mounted at ``scratch``, an empty directory) and then runs the
    bubblewrap command appended to it; None when overlayfs cannot name one of the paths."""
    if any(c in _UNNAMEABLE for c in f"{workspace}{scratch}"):
        return None
    source = _SOURCE.read_text(encoding="utf-8")
    return [_INTERPRETER, "-I", "-S", "-c", source, str(workspace), str(scratch), str(size)]


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
