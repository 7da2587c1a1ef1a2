"""No setuid or setgid file the agent made survives in the user's tree.

A command run as root (the local tier in CI) or any uid can ``chmod 4755`` a file it wrote; a
setuid-root program left in a workspace is a privilege escalation for whoever can run it.
:func:`strip_new_setid` clears the set-id bits of every regular file whose inode changed
since the sandbox started (pre-existing, untouched set-id files stay as they are).
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat as st
from pathlib import Path

log = logging.getLogger(__name__)

SETID_BITS = st.S_ISUID | st.S_ISGID
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def strip_new_setid(root: Path, since_ns: int, *, written_in: Path | None = None) -> list[str]:
    """Clear set-id bits of regular files under ``root`` changed at or after ``since_ns``.

    ``written_in``: a directory laid out like ``root`` that holds every file written under
    it (an overlay view's upper layer): only the set-id files found there are looked at
    (through ``root``), so the sweep costs what the run wrote, not the size of the tree.
    Blocking; never follows symlinks; returns the workspace-relative paths it changed.
    """
    found = _setid_files(written_in if written_in is not None else root, since_ns)
    # Walking ``root`` itself, the file opened must be the inode the walk saw; through
    # ``written_in`` the view shows it with other numbers, so it must still be set-id there.
    stripped = _strip(root, found, same_inode=written_in is None)
    if stripped:
        log.warning("cleared setuid/setgid bits the sandbox left on: %s", ", ".join(stripped))
    return stripped


def _setid_files(top: Path, since_ns: int) -> list[tuple[str, int, int]]:
    """``(path relative to top, st_dev, st_ino)`` of the regular files under ``top`` with a
    set-id bit, changed at or after ``since_ns`` (nothing followed)."""
    found: list[tuple[str, int, int]] = []
    pending = [top]
    while pending:
        directory = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.S_ISDIR(info.st_mode):
                pending.append(Path(entry.path))
            elif (
                st.S_ISREG(info.st_mode)
                and info.st_mode & SETID_BITS
                and info.st_ctime_ns >= since_ns
            ):
                found.append((os.path.relpath(entry.path, top), info.st_dev, info.st_ino))
    return found


def _strip(root: Path, found: list[tuple[str, int, int]], *, same_inode: bool) -> list[str]:
    """Clear the set-id bits of ``found`` under ``root``: opened by path without following
    (a symlink swapped in meanwhile is not chmodded), only a regular set-id file, and with
    ``same_inode`` only the very inode that was found."""
    stripped: list[str] = []
    for rel, dev, ino in found:
        with contextlib.suppress(OSError):
            fd = os.open(root / rel, _OPEN_FLAGS)
            try:
                now = os.fstat(fd)
                if same_inode and (now.st_dev, now.st_ino) != (dev, ino):
                    continue
                if st.S_ISREG(now.st_mode) and now.st_mode & SETID_BITS:
                    os.fchmod(fd, st.S_IMODE(now.st_mode) & ~SETID_BITS)
                    stripped.append(rel)
            finally:
                os.close(fd)
    return stripped
