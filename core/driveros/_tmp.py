"""The temporary directory driveros writes in: the configured one, or an error with the fix.

Python's :func:`tempfile.gettempdir` tries ``$TMPDIR``, ``$TEMP``, ``$TMP``, then ``/tmp``,
``/var/tmp`` and the current directory, and silently takes the next one when a directory is
missing, not writable or full: scratch copies of the user's code would land somewhere the user
did not choose (a shared ``/tmp``, the working directory). :func:`temp_root` takes the first
variable that is set (else ``/tmp``) and refuses, with :class:`TempDirError`, when that
directory cannot hold driveros's files.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from driveros._errors import TempDirError

#: The variables that name the temporary directory, in Python's order.
TEMP_VARS = ("TMPDIR", "TEMP", "TMP")
#: The directory when none of them is set.
DEFAULT_TEMP = "/tmp"  # noqa: S108
#: Less free space than this (bytes) counts as full.
MIN_FREE_BYTES = 1 << 20


def _refusal(path: Path) -> str | None:
    """Why ``path`` cannot take driveros's temporary files, or None."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if not os.access(path, os.W_OK | os.X_OK):
        return "is not writable by this user (or is on a read-only file system)"
    try:
        fs = os.statvfs(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    free = fs.f_bavail * fs.f_frsize
    if free < MIN_FREE_BYTES:
        return f"is full ({free // 1024} KiB free)"
    if fs.f_files and not fs.f_favail:
        return "is full (no free inodes)"
    return None


def temp_root(environ: Mapping[str, str] | None = None) -> Path:
    """The directory temporary files go in (absolute): ``$TMPDIR``, else ``$TEMP``, else
    ``$TMP``, else ``/tmp``. Raises :class:`TempDirError` naming the variable and the fix when
    it is missing, not a directory, not writable or full (under :data:`MIN_FREE_BYTES`
    free); never falls back to another directory. Blocking (a stat and a statvfs)."""
    env = os.environ if environ is None else environ
    source = next((f"${name}" for name in TEMP_VARS if env.get(name)), None)
    raw = env[source[1:]] if source is not None else DEFAULT_TEMP
    path = Path(raw).absolute()
    why = _refusal(path)
    if why is None:
        return path
    named = f" ({source})" if source is not None else ""
    fix = (
        f"free some space there or set {source or '$TMPDIR'} to another directory"
        if why.startswith("is full")
        else f"create it, make it writable, or set {source or '$TMPDIR'} to another directory"
    )
    raise TempDirError(
        f"the temporary directory {path}{named} {why}: {fix}; driveros does not fall back to"
        " another one",
        path=str(path),
        variable=source,
    )
