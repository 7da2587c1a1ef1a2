"""The symlink-safe path fence: every host-side file operation resolves through here.

Resolution walks one component at a time from a directory fd of the workspace root with
``O_NOFOLLOW``; every later step operates on the fd it verified, so a symlink swapped in
after a check is met by the next ``O_NOFOLLOW`` open instead of being followed. Symlinks are
followed only by this walker, only when their target stays inside the root, and never for
the last component of a write, an edit or a removal. Everything here blocks: callers run it
in a worker thread.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat as st
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from driveros._errors import SandboxError
from driveros.sandbox._paths import is_git_name, is_host_run_file
from driveros.sandbox._protocol import (
    ConcurrentChangeError,
    NotFoundError,
    PathEscapeError,
    PolicyError,
    SpecialFileError,
    WrongKindError,
)

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
#: Symlinks followed in one resolution before giving up (the kernel uses 40 too).
MAX_HOPS = 40


@dataclass
class _Step:
    fd: int
    name: str


def kind_of(mode: int) -> str:
    if st.S_ISREG(mode):
        return "file"
    if st.S_ISDIR(mode):
        return "dir"
    if st.S_ISLNK(mode):
        return "symlink"
    return "other"


def _show(parts: tuple[str, ...]) -> str:
    return "/".join(parts) or "."


class Fence:
    """Resolves workspace-relative components under ``root`` without ever leaving it."""

    def __init__(self, root: Path) -> None:
        real = Path(os.path.realpath(root))
        if not real.is_dir():
            raise NotFoundError(f"workspace {str(root)!r} is not a directory", workspace=str(root))
        self.root = real
        #: Permission bits for "others" added to what the fence creates: the docker tier sets
        #: them on a private copy it opened up for its unprivileged uid (see _docker.py).
        self.others_bits = 0
        info = real.stat()
        self._root_id = (info.st_dev, info.st_ino)

    # -- resolution ---------------------------------------------------------------------

    @contextlib.contextmanager
    def parent(
        self, parts: tuple[str, ...], *, follow_final: bool, create_dirs: bool = False
    ) -> Iterator[tuple[int, str, tuple[str, ...]]]:
        """Yield ``(dir_fd, name, logical_parts)`` for ``parts``.

        ``dir_fd`` is the verified directory holding ``name`` (``name`` is ``""`` for the
        root itself, then ``dir_fd`` is the root). With ``follow_final`` a final symlink is
        resolved (inside the root only); without it the final name is returned as is.
        ``logical_parts`` is where the walk ended, relative to the root.
        """
        stack = [_Step(os.open(self.root, _DIR & ~os.O_NOFOLLOW), "")]
        try:
            here_id = os.fstat(stack[0].fd)
            if (here_id.st_dev, here_id.st_ino) != self._root_id:
                raise PathEscapeError(
                    f"the workspace {str(self.root)!r} was replaced; refusing to continue",
                    workspace=str(self.root),
                )
            pending = list(parts)
            hops = 0
            while pending:
                name = pending.pop(0)
                if name in ("", "."):
                    continue
                if name == "..":  # only symlink targets get here: split_path refuses ".."
                    if len(stack) == 1:
                        raise PathEscapeError(
                            f"{_show(parts)!r} leads above the workspace through a symlink",
                            path=_show(parts),
                        )
                    os.close(stack.pop().fd)
                    continue
                if is_git_name(name):
                    raise PolicyError(
                        f"{_show(parts)!r} is inside the repository's .git directory, which "
                        "the agent never reads or writes (hooks and config there run code on "
                        "the user's next git command); refused",
                        path=_show(parts),
                    )
                final = not pending
                here = stack[-1].fd
                if final:
                    if not follow_final:
                        yield here, name, (*(s.name for s in stack[1:]), name)
                        return
                    try:
                        info = os.stat(name, dir_fd=here, follow_symlinks=False)
                    except FileNotFoundError:
                        yield here, name, (*(s.name for s in stack[1:]), name)
                        return
                    if not st.S_ISLNK(info.st_mode):
                        yield here, name, (*(s.name for s in stack[1:]), name)
                        return
                else:
                    fd = self._step_into(name, here, parts, create_dirs=create_dirs)
                    if fd is not None:
                        stack.append(_Step(fd, name))
                        continue
                # ``name`` is a symlink: expand it in place, inside the root only.
                hops += 1
                if hops > MAX_HOPS:
                    raise PathEscapeError(
                        f"{_show(parts)!r}: too many levels of symlinks", path=_show(parts)
                    )
                target = os.readlink(name, dir_fd=here)
                if target.startswith("/"):
                    inside = self._inside_root(target)
                    if inside is None:
                        raise PathEscapeError(
                            f"{_show(parts)!r} goes through a symlink to {target!r}, "
                            "outside the workspace; refused",
                            path=_show(parts),
                            target=target,
                        )
                    while len(stack) > 1:
                        os.close(stack.pop().fd)
                    pending[:0] = inside
                else:
                    pending[:0] = target.split("/")
            yield stack[-1].fd, "", tuple(s.name for s in stack[1:])
        finally:
            for step in stack:
                os.close(step.fd)

    def _step_into(
        self, name: str, here: int, parts: tuple[str, ...], *, create_dirs: bool
    ) -> int | None:
        """Open directory ``name`` under ``here`` without following; None for a symlink."""
        for _ in range(2):
            try:
                return os.open(name, _DIR, dir_fd=here)
            except FileNotFoundError:
                if not create_dirs:
                    raise NotFoundError(
                        f"{_show(parts)!r} does not exist", path=_show(parts)
                    ) from None
                self._mkdir(name, here, self.others_bits)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                try:
                    info = os.stat(name, dir_fd=here, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if st.S_ISLNK(info.st_mode):
                    return None
                raise WrongKindError(
                    f"{_show(parts)!r}: {name!r} is not a directory", path=_show(parts)
                ) from None
        raise NotFoundError(f"{_show(parts)!r} kept changing while in use", path=_show(parts))

    def _inside_root(self, target: str) -> list[str] | None:
        root = str(self.root)
        if target == root:
            return []
        if target.startswith(root.rstrip("/") + "/"):
            return target[len(root.rstrip("/")) + 1 :].split("/")
        return None

    @staticmethod
    def _mkdir(name: str, dir_fd: int, others_bits: int = 0) -> None:
        try:
            os.mkdir(name, 0o777, dir_fd=dir_fd)
        except FileExistsError:
            return
        _inherit_owner_of_dir(name, dir_fd)
        if others_bits:
            fd = os.open(name, _DIR, dir_fd=dir_fd)
            try:
                os.fchmod(fd, st.S_IMODE(os.fstat(fd).st_mode) | others_bits | 0o001)
            finally:
                os.close(fd)

    def host_path(self, parts: tuple[str, ...]) -> Path:
        """The host path of an existing directory, verified through the fence."""
        with self.parent(parts, follow_final=True) as (dir_fd, name, logical):
            if name:
                fd = self._open_dir(dir_fd, name, parts)
                os.close(fd)
            return self.root.joinpath(*logical)

    def open_dir(self, parts: tuple[str, ...]) -> int:
        """An fd of the directory ``parts`` (the caller closes it)."""
        with self.parent(parts, follow_final=True) as (dir_fd, name, _):
            if not name:
                return os.dup(dir_fd)
            return self._open_dir(dir_fd, name, parts)

    @staticmethod
    def _open_dir(dir_fd: int, name: str, parts: tuple[str, ...]) -> int:
        try:
            return os.open(name, _DIR, dir_fd=dir_fd)
        except FileNotFoundError:
            raise NotFoundError(f"{_show(parts)!r} does not exist", path=_show(parts)) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathEscapeError(
                    f"{_show(parts)!r} was replaced by a symlink while in use; refused",
                    path=_show(parts),
                ) from None
            if exc.errno == errno.ENOTDIR:
                raise WrongKindError(
                    f"{_show(parts)!r} is not a directory", path=_show(parts)
                ) from None
            raise

    # -- files --------------------------------------------------------------------------

    def open_regular(
        self,
        parts: tuple[str, ...],
        *,
        follow_final: bool,
        check: Callable[[tuple[str, ...]], None] | None = None,
    ) -> tuple[int, os.stat_result]:
        """Open an existing regular file for reading; refuse anything else.

        ``check`` sees the path the walk ended at (symlinks resolved) before anything is opened.
        """
        with self.parent(parts, follow_final=follow_final) as (dir_fd, name, logical):
            if check is not None:
                check(logical)
            if not name:
                raise WrongKindError(f"{_show(parts)!r} is a directory", path=_show(parts))
            before = self.lstat_checked(dir_fd, name, parts)
            if st.S_ISLNK(before.st_mode):
                raise PathEscapeError(
                    f"{_show(parts)!r} is a symlink; refused for this operation", path=_show(parts)
                )
            if st.S_ISDIR(before.st_mode):
                raise WrongKindError(f"{_show(parts)!r} is a directory", path=_show(parts))
            try:
                fd = os.open(name, _FILE, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise PathEscapeError(
                        f"{_show(parts)!r} was replaced by a symlink while in use; refused",
                        path=_show(parts),
                    ) from None
                raise
            after = os.fstat(fd)
            if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino) or not st.S_ISREG(
                after.st_mode
            ):
                os.close(fd)
                raise PathEscapeError(
                    f"{_show(parts)!r} changed while in use; refused", path=_show(parts)
                )
            return fd, after

    @staticmethod
    def lstat_checked(dir_fd: int, name: str, parts: tuple[str, ...]) -> os.stat_result:
        """lstat ``name``; NotFoundError when absent, SpecialFileError for devices/FIFOs."""
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            raise NotFoundError(f"{_show(parts)!r} does not exist", path=_show(parts)) from None
        if kind_of(info.st_mode) == "other":
            raise SpecialFileError(
                f"{_show(parts)!r} is a device file, FIFO or socket; refused", path=_show(parts)
            )
        return info

    @staticmethod
    def check_writable_target(
        dir_fd: int, name: str, parts: tuple[str, ...]
    ) -> os.stat_result | None:
        """The existing file a write would replace (None when new); refuse unsafe targets."""
        shown = _show(parts)
        if is_host_run_file(parts):
            raise PolicyError(
                f"{shown!r} holds hooks that run as the user outside the sandbox; only the "
                "user writes it",
                path=shown,
            )
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if st.S_ISLNK(info.st_mode):
            raise PathEscapeError(
                f"{shown!r} is a symlink; writing through symlinks is refused", path=shown
            )
        if st.S_ISDIR(info.st_mode):
            raise WrongKindError(f"{shown!r} is a directory", path=shown)
        if not st.S_ISREG(info.st_mode):
            raise SpecialFileError(
                f"{shown!r} is a device file, FIFO or socket; refused", path=shown
            )
        if info.st_nlink > 1:
            raise PolicyError(
                f"{shown!r} has {info.st_nlink} hard links (one may be outside the workspace); "
                "writes to multiply-linked files are refused",
                path=shown,
            )
        return info

    def replace_file(
        self,
        dir_fd: int,
        name: str,
        data: bytes,
        existing: os.stat_result | None,
        parts: tuple[str, ...],
    ) -> None:
        """Write ``data`` to a temp file beside ``name`` and rename it over ``name``.

        The rename is the only step that touches ``name``: a crash leaves the old content
        whole, and a symlink swapped in meanwhile is replaced, never followed.
        """
        tmp = f".{name[:64]}.{os.urandom(6).hex()}.driveros-tmp"
        fd = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o666,
            dir_fd=dir_fd,
        )
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                if existing is not None:
                    # Never a set-id bit on content the agent wrote (see _setid.py).
                    os.fchmod(fd, st.S_IMODE(existing.st_mode) & ~(st.S_ISUID | st.S_ISGID))
                    if os.geteuid() == 0:
                        os.fchown(fd, existing.st_uid, existing.st_gid)
                else:
                    if os.geteuid() == 0:
                        parent = os.fstat(dir_fd)
                        os.fchown(fd, parent.st_uid, parent.st_gid)
                    if self.others_bits:
                        os.fchmod(fd, st.S_IMODE(os.fstat(fd).st_mode) | self.others_bits)
            finally:
                os.close(fd)
            if existing is not None:
                now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                if (now.st_ino, now.st_mtime_ns, now.st_size) != (
                    existing.st_ino,
                    existing.st_mtime_ns,
                    existing.st_size,
                ):
                    raise ConcurrentChangeError(
                        f"{_show(parts)!r} changed while it was being written; nothing written",
                        path=_show(parts),
                    )
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise

    # -- removal ------------------------------------------------------------------------

    def remove(self, parts: tuple[str, ...]) -> None:
        if not parts:
            raise PolicyError("refusing to remove the workspace root", path=".")
        with self.parent(parts, follow_final=False) as (dir_fd, name, _):
            try:
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                raise NotFoundError(f"{_show(parts)!r} does not exist", path=_show(parts)) from None
            if st.S_ISDIR(info.st_mode):
                shutil.rmtree(name, dir_fd=dir_fd)
            else:
                os.unlink(name, dir_fd=dir_fd)


def _inherit_owner_of_dir(name: str, dir_fd: int) -> None:
    """When running as root, give a new entry the owner of its directory (docker tier)."""
    if os.geteuid() != 0:
        return
    parent = os.fstat(dir_fd)
    try:
        os.chown(name, parent.st_uid, parent.st_gid, dir_fd=dir_fd, follow_symlinks=False)
    except OSError as exc:  # pragma: no cover - a filesystem without chown
        raise SandboxError(f"could not set the owner of {name!r}: {exc}") from exc
