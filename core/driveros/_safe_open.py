"""Files driveros itself writes inside a workspace, opened without following a planted link.

A repository can commit a symbolic link where driveros keeps its own files
(``.driveros -> ~``, ``.driveros/corpus.jsonl -> ~/.bashrc``) or a FIFO that blocks an open.
Every such file is reached by a walk from the workspace root: each directory below the root is
opened with ``O_DIRECTORY | O_NOFOLLOW`` relative to the one before (``openat``), created when
asked for, and the last name is opened with ``O_NOFOLLOW | O_NONBLOCK`` and must be a regular
file. A link or a special file anywhere on the way raises :class:`PlantedLinkError` and
nothing is written. The root itself is the user's choice and may be reached through links.

Blocking: call these through ``asyncio.to_thread`` from async code.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from driveros._errors import DriverosError

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LAST = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class PlantedLinkError(DriverosError):
    """A file driveros writes in a workspace, or a directory on its way, is a symbolic link or
    not a regular file/directory; nothing was read or written through it."""


def anchor(path: Path, *roots: Path) -> tuple[Path, PurePosixPath]:
    """``path`` split into a root and the part below it that must be walked without links.

    The first of ``roots`` that lexically contains ``path`` (``..`` folded, links not
    resolved) is the root; a path inside none of them is the user's explicit choice outside
    every workspace: its own directory is the root and only its last name is checked.
    """
    # Lexical on purpose: resolving would follow the very links the walk must meet.
    target = Path(os.path.abspath(path))  # noqa: PTH100
    for root in roots:
        lexical = Path(os.path.abspath(root))  # noqa: PTH100
        for base in dict.fromkeys((lexical, Path(root).resolve())):
            if target != base and target.is_relative_to(base):
                return base, PurePosixPath(target.relative_to(base).as_posix())
    return target.parent, PurePosixPath(target.name)


def _parts(rel: PurePosixPath | str) -> list[str]:
    parts = [p for p in PurePosixPath(rel).parts if p not in ("", ".")]
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        raise PlantedLinkError(f"not a plain relative path: {str(rel)!r}", path=str(rel))
    return parts


def refuse_unless_regular(dir_fd: int, name: str, *, root: Path, shown: str) -> None:
    """:class:`PlantedLinkError` unless ``name`` in ``dir_fd`` is missing or a regular file."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise _refusal(dir_fd, name, shown, root)


def _refusal(dir_fd: int, name: str, shown: str, root: Path) -> PlantedLinkError:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file/directory"
    except OSError:
        kind = "not usable"
    return PlantedLinkError(
        f"refusing to write or read {shown} in {root}: it is {kind} "
        "(driveros never follows a link a workspace planted; remove it)",
        path=str(root / shown),
    )


@contextlib.contextmanager
def open_dir(root: Path, rel: PurePosixPath | str, *, create: bool = False) -> Iterator[int]:
    """A descriptor of the directory ``root/rel``; every component of ``rel`` is a real
    directory (created 0o700 when ``create``). :class:`PlantedLinkError` on a link."""
    parts = [] if str(rel) in ("", ".") else _parts(rel)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for depth, part in enumerate(parts):
            shown = "/".join(parts[: depth + 1])
            try:
                inner = os.open(part, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o700, dir_fd=fd)
                try:
                    inner = os.open(part, _DIR, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise _refusal(fd, part, shown, root) from exc
                    raise
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _refusal(fd, part, shown, root) from exc
                raise
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def open_file(
    root: Path,
    rel: PurePosixPath | str,
    flags: int,
    *,
    perms: int = 0o600,
    create_dirs: bool = False,
) -> int:
    """``os.open`` of ``root/rel`` with ``flags`` that follows no link below ``root``: the
    directories as :func:`open_dir`, the file itself ``O_NOFOLLOW`` and a regular file (a FIFO
    or device is refused unopened or, if it raced in, closed unread). The descriptor is
    blocking. ``FileNotFoundError`` when it (or a directory) is missing and not created."""
    parts = _parts(rel)
    with open_dir(root, "/".join(parts[:-1]) or ".", create=create_dirs) as dir_fd:
        name, shown = parts[-1], "/".join(parts)
        refuse_unless_regular(dir_fd, name, root=root, shown=shown)
        try:
            fd = os.open(name, flags | _LAST, perms, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR, errno.ENOTDIR):
                raise _refusal(dir_fd, name, shown, root) from exc
            raise
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise _refusal(dir_fd, name, shown, root)
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        except BaseException:
            os.close(fd)
            raise
        return fd


def read_bytes(root: Path, rel: PurePosixPath | str) -> bytes | None:
    """The content of ``root/rel`` read without following a link; None when it is missing."""
    try:
        fd = open_file(root, rel, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def append(root: Path, rel: PurePosixPath | str, data: bytes, *, perms: int = 0o600) -> None:
    """Append ``data`` to ``root/rel`` in one write under an exclusive ``flock``, creating the
    file (``perms``) and its directories; flushed to disk before returning."""
    fd = open_file(root, rel, os.O_WRONLY | os.O_APPEND | os.O_CREAT, perms=perms, create_dirs=True)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)  # also drops the lock


def unlink(root: Path, rel: PurePosixPath | str) -> None:
    """Remove the name ``root/rel`` (a link itself, never its target); missing is fine."""
    parts = _parts(rel)
    try:
        with open_dir(root, "/".join(parts[:-1]) or ".") as dir_fd:
            os.unlink(parts[-1], dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return
