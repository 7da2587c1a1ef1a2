"""Mounts a lease owns (copy-on-write scratch views): found and unmounted before removal."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path


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
