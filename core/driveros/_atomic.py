"""Replacing a file atomically: the one way driveros writes a file that a crash must not leave
half written (the user's files on accept, the state directory, the trust store, kept
sessions, the files driveros keeps in a workspace).

The data goes to a temporary file in the target's directory (so the rename stays on one file
system), is flushed to disk, gets its permission bits, and then replaces the target in one
``rename``. The temporary file is created ``O_EXCL | O_NOFOLLOW`` and both it and the rename
are addressed relative to one open descriptor of the directory, so a directory swapped for a
link meanwhile cannot redirect either. On any failure (or cancellation) the temporary file is
removed and the target is left as it was. Blocking: call it through ``asyncio.to_thread``
from async code.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from driveros._safe_open import anchor, open_dir, refuse_unless_regular

_TMP = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@contextlib.contextmanager
def _parent(path: Path, root: Path | None) -> Iterator[int]:
    if root is None:
        with open_dir(path.parent, ".") as fd:
            yield fd
        return
    base, rel = anchor(path, root)
    if rel.parent == PurePosixPath("."):  # the root's own file, or a path outside the root
        base.mkdir(parents=True, exist_ok=True)
    with open_dir(base, rel.parent, create=True) as fd:
        yield fd


def write_atomic(
    path: Path,
    data: bytes,
    *,
    perms: int = 0o600,
    prefix: str = "",
    suffix: str = ".tmp",
    root: Path | None = None,
) -> None:
    """Replace ``path`` with ``data``; the file ends with permission bits ``perms``.

    The temporary file is named ``.<prefix or path's name>.<random><suffix>`` (the state
    directory's garbage collection recognises its leftovers by that shape). A symbolic link
    at ``path`` is replaced, never followed. With ``root`` (a workspace holding ``path``), the
    directories from ``root`` down to ``path`` are walked without following links and made
    when missing, and a link or special file at ``path`` itself is refused rather than
    replaced (:class:`driveros._safe_open.PlantedLinkError`).
    """
    name = path.name
    with _parent(path, root) as dir_fd:
        if root is not None:
            base, rel = anchor(path, root)
            refuse_unless_regular(dir_fd, name, root=base, shown=str(rel))
        while True:
            tmp = f".{prefix or name}.{secrets.token_hex(4)}{suffix}"
            try:
                fd = os.open(tmp, _TMP, 0o600, dir_fd=dir_fd)
                break
            except FileExistsError:
                continue
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fchmod(fh.fileno(), perms)
                os.fsync(fh.fileno())
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
