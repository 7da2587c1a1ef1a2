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


def mounts_under(root: Path) -> list[str]:
    """Mount points at or below ``root`` in this mount namespace, deepest first."""
    top = str(root).rstrip("/")
    found: list[str] = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
            for line in fh:
                fields = line.split(" ", 5)
                if len(fields) < 5:
                    continue
                point = _unescape(fields[4])
                if point == top or point.startswith(top + "/"):
                    found.append(point)
    except OSError:
        return []
    return sorted(set(found), key=lambda p: (-p.count("/"), p))


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

    Raises OSError when a mount stays: removing the tree would then descend into it.
    """
    points = await asyncio.to_thread(mounts_under, root)
    if not points:
        return
    umount = shutil.which("umount")
    if umount is None:
        raise OSError(f"cannot unmount {points[0]}: no umount command")
    for point in points:
        if await _umount(umount, "--", point) != 0:
            await _umount(umount, "-l", "--", point)
    left = await asyncio.to_thread(mounts_under, root)
    if left:
        raise OSError(f"cannot unmount {left[0]}")
