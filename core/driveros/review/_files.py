"""Blocking file helpers (copying, hashing, atomic writes). Callers run them off the loop."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath

from driveros._atomic import write_atomic
from driveros._safe_open import PlantedLinkError
from driveros.review._errors import ReviewError

#: How many threads copy files when a scratch copy starts.
COPY_WORKERS = 4
#: ioctl(2) request that makes a file share another's blocks copy-on-write (linux/fs.h).
FICLONE = 0x40049409


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_BELOW = _DIR_FLAGS | os.O_NOFOLLOW  #: a directory below the root: never through a link


@contextlib.contextmanager
def open_parent(root: Path, rel: str, *, make: bool = False) -> Iterator[tuple[int, str]]:
    """An open descriptor of the directory holding ``root/rel``, and ``rel``'s last name.

    Every directory below ``root`` is opened without following a symlink (``ELOOP`` or
    ``ENOTDIR`` when one is a link now), so a directory swapped for a link while the tree is
    read cannot lead the reader outside ``root``. ``make`` (in a copy being made): a missing
    directory is made, and a link or a file standing where a directory goes is removed first
    (the copy takes the source's shape), never followed.
    """
    *dirs, name = rel.split("/")
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in dirs:
            inner = _open_below(fd, part, make=make, replace=make)
            os.close(fd)
            fd = inner
        yield fd, name
    finally:
        os.close(fd)


def _open_below(dir_fd: int, part: str, *, make: bool = False, replace: bool = False) -> int:
    """The directory ``part`` of ``dir_fd``, opened without following a link. ``make``: made,
    as ``mkdir`` would, where missing; ``replace`` (a copy being made, see
    :func:`open_parent`): a link or a file standing there is removed first, never followed.
    Otherwise ``ELOOP``/``ENOTDIR`` (a link or not a directory) or ``ENOENT`` raise."""
    try:
        return os.open(part, _BELOW, dir_fd=dir_fd)
    except OSError as exc:
        if replace and exc.errno in (errno.ELOOP, errno.ENOTDIR):
            os.unlink(part, dir_fd=dir_fd)
        elif not (make and exc.errno == errno.ENOENT):
            raise
    with contextlib.suppress(FileExistsError):
        os.mkdir(part, dir_fd=dir_fd)
    return os.open(part, _BELOW, dir_fd=dir_fd)


def clone_or_copy(dir_fd: int, name: str, dst: Path) -> bool:
    """Copy the file ``name`` of the directory ``dir_fd`` (see :func:`open_parent`) to a new
    ``dst`` (see :func:`copy_into`); True when it was cloned."""
    parent = os.open(dst.parent, _DIR_FLAGS)
    try:
        return copy_into(dir_fd, name, parent, dst.name)
    finally:
        os.close(parent)


def copy_into(dir_fd: int, name: str, dst_fd: int, dst_name: str) -> bool:
    """Copy the file ``name`` of the directory ``dir_fd``, content and mode, to a new
    ``dst_name`` of the directory ``dst_fd`` (never through a link); a symlink is copied as a
    link.

    A regular file is first cloned (``FICLONE``: a reflink, sharing blocks copy-on-write, on
    btrfs, xfs and the like: no data written), else copied. True when it was cloned. Anything
    else (a directory, a fifo) raises ``EISDIR``.
    """
    st = os.lstat(name, dir_fd=dir_fd)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(name, dir_fd=dir_fd), dst_name, dir_fd=dst_fd)
        return False
    if not stat.S_ISREG(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "not a regular file", name)
    import fcntl  # POSIX only, like the rest of the scratch machinery

    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd_in = os.open(name, flags, dir_fd=dir_fd)
    try:
        st = os.fstat(fd_in)  # what was opened: the path may have changed since lstat
        if not stat.S_ISREG(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "no longer a regular file", name)
        out_flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd_out = os.open(dst_name, out_flags, 0o600, dir_fd=dst_fd)
        try:
            try:
                fcntl.ioctl(fd_out, FICLONE, fd_in)
                cloned = True
            except OSError:
                cloned = False
                with (
                    os.fdopen(os.dup(fd_in), "rb") as fin,
                    os.fdopen(os.dup(fd_out), "wb") as fout,
                ):
                    shutil.copyfileobj(fin, fout, 1024 * 1024)
            os.fchmod(fd_out, stat.S_IMODE(st.st_mode))
        finally:
            os.close(fd_out)
    finally:
        os.close(fd_in)
    return cloned


def check_relpath(rel: str) -> str:
    """Normalise a workspace-relative POSIX path; refuse absolute paths and ``..``."""
    p = PurePosixPath(rel.replace("\\", "/"))
    if p.is_absolute() or not p.parts or any(part in ("..", "") for part in p.parts):
        raise ReviewError(f"not a workspace-relative path: {rel!r}", path=rel)
    if p.parts[0] == ".git":
        raise ReviewError(f"refusing a path inside .git: {rel!r}", path=rel)
    return p.as_posix()


def _clear(dir_fd: int, name: str, *, dirs: bool = True) -> None:
    """Remove ``name`` of the directory ``dir_fd``: a file, a link itself, or (``dirs``) a
    directory tree. Missing is fine."""
    try:
        mode = os.lstat(name, dir_fd=dir_fd).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        os.unlink(name, dir_fd=dir_fd)
    elif dirs:
        shutil.rmtree(name, dir_fd=dir_fd)


def _drop(root: Path, rel: str, *, dirs: bool = True) -> None:
    """Remove ``root/rel`` (see :func:`_clear`), reached without following a link; a parent
    that is missing, a link or a file means there is nothing there to remove."""
    try:
        with open_parent(root, rel) as (fd, name):
            _clear(fd, name, dirs=dirs)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
            raise


#: Errors reading a source path that mean it changed under the copy (vanished, or became a
#: directory or a symlink): tried again, then taken as absent.
_SOURCE_CHANGED = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EISDIR})
_SYNC_TRIES = 3


def sync_paths(src_root: Path, dst_root: Path, relpaths: Sequence[str]) -> None:
    """Make each ``dst_root/rel`` equal ``src_root/rel`` (copy, or delete when absent).

    The source may change meanwhile (a build, a watcher): a path that vanishes, or keeps
    changing type, while it is copied ends up absent from ``dst_root``, as if it had been
    deleted a moment earlier. Nothing half-copied is left behind.
    """
    for rel in relpaths:
        for _ in range(_SYNC_TRIES):
            try:
                _sync_one(src_root, rel, dst_root)
                break
            except OSError as exc:
                if exc.errno not in _SOURCE_CHANGED:
                    raise
                _drop(dst_root, rel, dirs=False)  # whatever was half-made
        else:
            _drop(dst_root, rel, dirs=False)


def _sync_one(src_root: Path, rel: str, dst_root: Path) -> None:
    # The source is reached one directory at a time (a directory swapped for a link raises,
    # is tried again, and ends absent): the copy never reads outside ``src_root``. The copy
    # is written the same way, so a link in it never leads a write outside ``dst_root``.
    with open_parent(src_root, rel) as (dir_fd, name):
        try:
            is_dir = stat.S_ISDIR(os.lstat(name, dir_fd=dir_fd).st_mode)
        except FileNotFoundError:
            _drop(dst_root, rel)
            return
        if is_dir:
            return  # nested repositories and the like are not copied
        with open_parent(dst_root, rel, make=True) as (dst_fd, dst_name):
            _clear(dst_fd, dst_name)
            # Content and mode only (timestamps do not matter); a reflink where the file
            # system has them.
            copy_into(dir_fd, name, dst_fd, dst_name)


def write_overlays(root: Path, overlays: Mapping[str, str]) -> None:
    """Write each buffer's text at its path in the copy ``root`` (a link or a directory
    there is replaced; no link on the way is followed)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    for rel, text in overlays.items():
        with open_parent(root, rel, make=True) as (fd, name):
            with contextlib.suppress(FileNotFoundError):
                mode = os.lstat(name, dir_fd=fd).st_mode
                if stat.S_ISLNK(mode) or stat.S_ISDIR(mode):
                    _clear(fd, name)
            out = os.open(name, flags, 0o666, dir_fd=fd)
            # newline="" keeps the buffer's own line endings byte for byte.
            with os.fdopen(out, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)


def chunks(items: Sequence[str], n: int) -> list[Sequence[str]]:
    if not items:
        return []
    size = max(1, -(-len(items) // n))
    return [items[i : i + size] for i in range(0, len(items), size)]


def blob_sha(data: bytes) -> str:
    """The git blob id of ``data``."""
    h = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
    h.update(data)
    return h.hexdigest()


def current_sha(path: Path) -> str | None:
    """The git blob id of a file as it is now (a symlink hashes its target), None if absent."""
    if path.is_symlink():
        return blob_sha(os.fsencode(path.readlink()))
    if not path.is_file():
        return None
    try:
        return blob_sha(path.read_bytes())
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None  # gone (or replaced) since the check: absent, as a moment later


def current_shas(root: Path, relpaths: Iterable[str]) -> dict[str, str | None]:
    return {rel: current_sha(root / rel) for rel in relpaths}


def inside(root: Path, target: Path) -> bool:
    """Whether ``target``'s parent directory really lies within ``root`` (symlinks resolved)."""
    real_root = root.resolve()
    parent = target.parent.resolve()
    return parent == real_root or real_root in parent.parents


def atomic_write(target: Path, data: bytes, *, mode: str | None, root: Path) -> None:
    """Replace ``target`` (inside ``root``, a scratch copy) with ``data`` atomically (temp file
    in the same directory + rename). The directories from ``root`` down are walked without
    following a link and made where missing; a link on the way, or a link or special file
    at ``target`` itself (unless it becomes a link, ``mode`` 120000), raises
    :class:`PlantedLinkError` and nothing is written (a copy's links are the agent's)."""
    rel = PurePosixPath(target.relative_to(root).as_posix())
    with _walk(root, rel.parent, create=True) as fds:
        if mode == "120000":
            tmp = f".{rel.name}.driveros-{os.urandom(4).hex()}.tmp"
            os.symlink(os.fsdecode(data), tmp, dir_fd=fds[-1])
            os.replace(tmp, rel.name, src_dir_fd=fds[-1], dst_dir_fd=fds[-1])
            return
    write_atomic(target, data, perms=new_perms(target, mode), suffix=".driveros.tmp", root=root)


@contextlib.contextmanager
def _walk(root: Path, rel: PurePosixPath, *, create: bool = False) -> Iterator[list[int]]:
    """Descriptors of ``root`` and of each directory of ``rel`` below it, opened without
    following a link (made, as ``mkdir`` would, where missing and ``create``).
    :class:`PlantedLinkError` when one is a link or not a directory; ``FileNotFoundError``
    when one is missing and not made."""
    fds = [os.open(root, _DIR_FLAGS)]
    try:
        for depth, part in enumerate(p for p in rel.parts if p not in ("", ".")):
            try:
                fds.append(_open_below(fds[-1], part, make=create))
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _planted(root, rel.parts[: depth + 1]) from exc
                raise
        yield fds
    finally:
        for fd in fds:
            os.close(fd)


def _planted(root: Path, shown: tuple[str, ...]) -> PlantedLinkError:
    where = "/".join(shown)
    return PlantedLinkError(
        f"refusing to write through {where} in {root}: it is a symbolic link or not a "
        "directory (driveros never follows a link planted in a tree it writes)",
        path=str(root / where),
    )


def new_perms(target: Path, mode: str | None) -> int:
    """The permission bits the agent's version of ``target`` gets (git ``mode``)."""
    if target.is_file() and not target.is_symlink():
        # Keep the user's permission bits; only the executable bit follows the change.
        perms = stat.S_IMODE(target.stat().st_mode)
        if mode == "100755":
            perms |= (perms & 0o444) >> 2
        elif mode == "100644":
            perms &= ~0o111
    else:
        perms = 0o755 if mode == "100755" else 0o644
    return perms & ~(stat.S_ISUID | stat.S_ISGID)  # never a set-id bit on what the agent wrote


def remove_file(root: Path, target: Path) -> None:
    """Delete ``target`` and then any parent directories left empty (up to ``root``), reached
    without following a link (:class:`PlantedLinkError` when a parent is one); a link at
    ``target`` is removed itself. Missing is fine."""
    rel = PurePosixPath(target.relative_to(root).as_posix())
    try:
        with _walk(root, rel.parent) as fds:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(rel.name, dir_fd=fds[-1])
            names = list(rel.parent.parts)
            for depth in range(len(names) - 1, -1, -1):
                try:
                    os.rmdir(names[depth], dir_fd=fds[depth])
                except OSError:
                    break
    except FileNotFoundError:
        return


def read_scratch(path: Path) -> bytes:
    if path.is_symlink():
        return os.fsencode(path.readlink())
    return path.read_bytes()
