"""Mounts a lease owns (copy-on-write scratch views): found and unmounted before removal."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import Sequence
from pathlib import Path

#: Programs that make a view's mount (fuse-overlayfs's own helper is fusermount3).
MOUNT_HELPERS = frozenset({"mount", "fuse-overlayfs", "fusermount", "fusermount3", "setpriv"})
#: How long garbage collection waits for a dead owner's mount helper to be gone.
HELPER_WAIT_S = 5.0


def _unescape(text: str) -> str:
    """A mount point as /proc/self/mountinfo writes it (space, tab, newline, backslash octal)."""
    out = bytearray()
    raw = text.encode("utf-8", "surrogateescape")
    i = 0
    while i < len(raw):
        if raw[i] == 0x5C and raw[i + 1 : i + 4].isdigit() and len(raw[i + 1 : i + 4]) == 3:
            out.append(int(raw[i + 1 : i + 4], 8))
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", "surrogateescape")


def _mounts_with_types(root: Path) -> dict[str, str]:
    """Mount point -> file system type (``overlay``, ``fuse.fuse-overlayfs`` ...) at or below
    ``root`` in this mount namespace (the last mount at a point wins: it is the visible one)."""
    top = str(root).rstrip("/")
    found: dict[str, str] = {}
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                fields = left.split(" ", 5)
                if len(fields) < 5:
                    continue
                point = _unescape(fields[4])
                if point == top or point.startswith(top + "/"):
                    found[point] = (right.split(" ", 1) or [""])[0]
    except OSError:
        return {}
    return found


def mounts_under(root: Path) -> list[str]:
    """Mount points at or below ``root`` in this mount namespace, deepest first."""
    return sorted(_mounts_with_types(root), key=lambda p: (-p.count("/"), p))


async def _umount(*argv: str) -> int:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        return await proc.wait()
    except BaseException:
        await asyncio.shield(proc.wait())
        raise


async def unmount_under(root: Path) -> None:
    """Unmount everything mounted at or below ``root`` (lazily when busy).

    A FUSE mount (``fuse.fuse-overlayfs``: a view made without root) is unmounted with
    ``fusermount3 -u`` (or ``fusermount -u``), which works for the user who mounted it; any
    other with ``umount``. Raises OSError when a mount stays: removing the tree would then
    descend into it.
    """
    kinds = await asyncio.to_thread(_mounts_with_types, root)
    if not kinds:
        return
    points = sorted(kinds, key=lambda p: (-p.count("/"), p))
    umount = shutil.which("umount")
    fuse = shutil.which("fusermount3") or shutil.which("fusermount")
    for point in points:
        if kinds[point].startswith("fuse") and fuse is not None:
            if await _umount(fuse, "-u", "--", point) != 0:
                await _umount(fuse, "-u", "-z", "--", point)
        elif umount is not None and await _umount(umount, "--", point) != 0:
            await _umount(umount, "-l", "--", point)
    left = await asyncio.to_thread(mounts_under, root)
    if left:
        raise OSError(f"cannot unmount {left[0]}")


def _proc_text(pid: str, name: str) -> bytes:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as fh:
            return fh.read(1 << 16)
    except OSError:
        return b""


def _owned(path: str) -> bool:
    name = Path(path).name
    return name.startswith("driveros-") and ".." not in Path(path).parts


def _names(arg: bytes, path: bytes) -> bool:
    """Whether ``arg`` (a command-line argument) names ``path`` or something below it (the
    path ends there, or at a ``/``, ``,`` or ``:`` as in mount options)."""
    start = arg.find(path)
    while start >= 0:
        end = start + len(path)
        if end == len(arg) or arg[end : end + 1] in (b"/", b",", b":"):
            return True
        start = arg.find(path, start + 1)
    return False


def mount_helpers(paths: Sequence[str]) -> list[tuple[int, bool]]:
    """Live mount helpers (:data:`MOUNT_HELPERS`) whose command line names one of ``paths``,
    each with whether it is a ``fuse-overlayfs`` serving a mount that exists (a view's
    daemon: unmounting ends it). Blocking (reads /proc)."""
    # Only paths a lease may own (``driveros-*``, absolute): a record naming "/" must not
    # make every mount helper on the machine a target.
    wanted = [os.fsencode(p) for p in paths if p.startswith("/") and _owned(p)]
    if not wanted:
        return []
    me = str(os.getpid())
    found: list[tuple[int, bool]] = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            pid = entry.name
            if not pid.isdigit() or pid == me:
                continue
            comm = _proc_text(pid, "comm").strip().decode("utf-8", "replace")
            if comm not in MOUNT_HELPERS:
                continue
            argv = _proc_text(pid, "cmdline").split(b"\0")
            if not any(_names(arg, w) for arg in argv for w in wanted):
                continue
            stat = _proc_text(pid, "stat")
            if b") Z" in stat:
                continue  # a zombie: done, only not reaped
            point = argv[-2].decode("utf-8", "surrogateescape") if len(argv) > 1 else ""
            serving = comm == "fuse-overlayfs" and bool(point) and bool(mounts_under(Path(point)))
            found.append((int(pid), serving))
    return found


async def settle_mount_helpers(paths: Sequence[str], *, wait_s: float = HELPER_WAIT_S) -> None:
    """Make sure no mount helper of a dead owner (naming one of ``paths``) can still mount
    something there: each is killed (one we may not signal, a setuid ``fusermount3``, is
    waited for) and awaited, up to ``wait_s``. A ``fuse-overlayfs`` serving its view is left to
    the unmount. Raises OSError when one is still alive then."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while True:
        busy = [
            pid for pid, serving in await asyncio.to_thread(mount_helpers, paths) if not serving
        ]
        if not busy:
            return
        for pid in busy:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if loop.time() >= deadline:
            raise OSError(f"a mount helper (pid {busy[0]}) is still at work there")
        await asyncio.sleep(0.05)
