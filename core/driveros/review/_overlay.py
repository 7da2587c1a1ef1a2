"""Copy-on-write scratch views: a kernel overlayfs over the user's workspace.

The user's repository is the overlay's lower layer (never written: the kernel copies a file up
into the run's own ``upper`` directory before the first write); the agent works in the merged
view. Starting costs one ``mount`` plus a baseline made of ``HEAD`` and the user's dirty files
(no checkout, no copy), and :func:`upper_candidates` finds what the run touched by walking
only the upper layer: time and disk proportional to the run's changes, not the repository.

The strategy is chosen by :func:`choose_strategy` (``$DRIVEROS_SCRATCH_STRATEGY``: ``auto``,
``overlay``, ``worktree``, ``copy``); see docs/review.md.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path

from driveros.state import mounts_under

log = logging.getLogger(__name__)

#: The environment variable that picks the strategy.
STRATEGY_VAR = "DRIVEROS_SCRATCH_STRATEGY"
STRATEGIES: tuple[str, ...] = ("auto", "overlay", "worktree", "copy")
#: What ``auto`` means in this release (the overlay is opt-in until the docker tier mounts it).
AUTO_PREFERS: tuple[str, ...] = ("worktree", "copy")

#: File systems a lower layer (the workspace) or an upper layer (the scratch root) may be on.
_LOWER_FS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs"})
_UPPER_FS = _LOWER_FS
#: Characters the overlay's mount options cannot carry unescaped.
_BAD_CHARS = frozenset(",:\\\n=")
_OPAQUE = ("trusted.overlay.opaque", "user.overlay.opaque")
_REDIRECT = ("trusted.overlay.redirect", "user.overlay.redirect")


def strategy_from_env(environ: Mapping[str, str] | None = None) -> str:
    """The strategy ``$DRIVEROS_SCRATCH_STRATEGY`` asks for (default ``auto``)."""
    raw = (os.environ if environ is None else environ).get(STRATEGY_VAR, "").strip().lower()
    if not raw:
        return "auto"
    if raw not in STRATEGIES:
        log.warning("ignoring %s=%r: expected one of %s", STRATEGY_VAR, raw, ", ".join(STRATEGIES))
        return "auto"
    return raw


@functools.cache
def overlay_probe() -> str | None:
    """None when this process can mount a kernel overlay, else why not (cached)."""
    if os.geteuid() != 0:
        return "not root (an unprivileged user namespace is not tried yet)"
    try:
        with open("/proc/filesystems", encoding="utf-8") as fh:
            if not any(line.split()[-1:] == ["overlay"] for line in fh):
                return "the kernel has no overlay file system"
    except OSError as exc:
        return f"cannot read /proc/filesystems: {exc}"
    if shutil.which("mount") is None or shutil.which("umount") is None:
        return "no mount/umount command"
    return None


def scratch_strategies() -> dict[str, str | None]:
    """Every strategy and None when usable on this machine, else why not."""
    return {"overlay": overlay_probe(), "worktree": None, "copy": None}


def fs_type(path: Path) -> str:
    """The file system type of the mount holding ``path`` (from /proc/self/mountinfo)."""
    best, kind = "", ""
    target = str(path)
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                fields = left.split(" ")
                if len(fields) < 5 or not right:
                    continue
                point = fields[4].replace("\\040", " ")
                inside = point == "/" or target == point or target.startswith(point + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, right.split()[0]
    except OSError:
        return ""
    return kind


def overlay_refusal(lower: Path, root: Path) -> str | None:
    """None when ``lower`` can be an overlay's lower layer with upper/work under ``root``."""
    why = overlay_probe()
    if why is not None:
        return why
    for p in (lower, root):
        if _BAD_CHARS.intersection(str(p)):
            return f"the path {str(p)!r} holds a character mount options cannot carry"
    if lower == root or lower in root.parents or root in lower.parents:
        return "the scratch directory and the workspace overlap"
    kind = fs_type(lower)
    if kind not in _LOWER_FS:
        return f"the workspace is on {kind or 'an unknown file system'}"
    kind = fs_type(root)
    if kind not in _UPPER_FS:
        return f"the scratch directory is on {kind or 'an unknown file system'}"
    return None


async def _run(*argv: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        _, err = await proc.communicate()
    except BaseException:
        proc.kill()
        await asyncio.shield(proc.wait())
        raise
    return proc.returncode or 0, err.decode("utf-8", "replace").strip()


async def mount_overlay(lower: Path, upper: Path, work: Path, merged: Path) -> str | None:
    """Mount the overlay; None on success, else the error."""
    opts = f"lowerdir={lower},upperdir={upper},workdir={work}"
    code, err = await _run("mount", "-t", "overlay", "overlay", "-o", opts, str(merged))
    return None if code == 0 else (err or f"mount exited {code}")


async def ensure_mounted(lower: Path, upper: Path, work: Path, merged: Path) -> str | None:
    """Mount the overlay unless it is mounted already (a kept copy after a reboot)."""
    if str(merged) in await asyncio.to_thread(mounts_under, merged):
        return None
    return await mount_overlay(lower, upper, work, merged)


def _xattr(path: str, names: tuple[str, ...]) -> bool:
    for name in names:
        try:
            os.getxattr(path, name, follow_symlinks=False)
            return True
        except OSError:
            continue
    return False


def upper_candidates(upper: Path, prefix: str) -> list[str]:
    """Paths (relative to the merged root) the run may have changed, from the upper layer.

    Files and symlinks are created or modified; a whiteout (a 0/0 character device) is a
    deletion of whatever was there (a file or a whole directory); an opaque or redirected
    directory is named whole (its lower contents are hidden or moved). ``.git`` is never
    named. Only the upper layer is walked: proportional to what the run wrote.
    """
    start = upper / prefix if prefix else upper
    out: list[str] = []
    if not start.is_dir():
        return out
    base = len(str(upper)) + 1
    stack = [str(start)]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            rel = entry.path[base:]
            if entry.name.lower().rstrip(". ") == ".git":
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if _xattr(entry.path, _OPAQUE) or _xattr(entry.path, _REDIRECT):
                    out.append(rel)
                else:
                    stack.append(entry.path)
            elif stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
                out.append(rel)  # whiteout
            else:
                out.append(rel)
    return sorted(out)
