"""Replacing a file atomically: the one way driveros writes a file that a crash must not leave
half written (the user's files on accept, the state directory, the trust store, kept
sessions).

The data goes to a temporary file in the target's directory (so the rename stays on one file
system), is flushed to disk, gets its permission bits, and then replaces the target in one
``rename``. On any failure (or cancellation) the temporary file is removed and the target is
left as it was. Blocking: call it through ``asyncio.to_thread`` from async code.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(
    path: Path, data: bytes, *, perms: int = 0o600, prefix: str = "", suffix: str = ".tmp"
) -> None:
    """Replace ``path`` with ``data``; the file ends with permission bits ``perms``.

    The temporary file is named ``.<prefix or path's name>.<random><suffix>`` (the state
    directory's garbage collection recognises its leftovers by that shape). A symbolic link
    at ``path`` is replaced, never followed.
    """
    fd, name = tempfile.mkstemp(prefix=f".{prefix or path.name}.", suffix=suffix, dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.chmod(perms)
        tmp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
