"""The file half of the Sandbox protocol, done host-side through the fence.

Both tiers use it: the docker tier's workspace is a bind mount of the same directory, so
host-side operations are fast and exactly as symlink-safe as the local tier's. Blocking work
runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import stat as st
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from driveros._errors import SandboxError
from driveros.sandbox._fence import Fence, kind_of
from driveros.sandbox._paths import escape_name, is_safe_name, split_path
from driveros.sandbox._protocol import (
    DirEntry,
    EditError,
    FileStat,
    FileTooLargeError,
    LineRange,
    NotFoundError,
    NotTextError,
    SearchError,
    SearchResults,
    SecretFileError,
    WrongKindError,
)
from driveros.sandbox._search import find_ripgrep, search_python, search_ripgrep
from driveros.sandbox._secrets import SecretFiles

_T = TypeVar("_T")


def encode_text(text: str, path: str) -> bytes:
    """``text`` as UTF-8; lone surrogates are refused rather than half-written."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise NotTextError(
            f"content for {path!r} is not valid Unicode text (position {exc.start})", path=path
        ) from exc


#: Default largest file ``read_file``/``read_bytes``/``edit`` will load.
DEFAULT_MAX_READ = 16 * 1024 * 1024
#: Most bytes of text one ``read_lines`` returns (a range is cut at a line before it).
MAX_RANGE_BYTES = 256 * 1024
#: ``read_lines`` counts a file's lines only up to this size (larger: ``total`` is None).
MAX_COUNTED_FILE = 256 * 1024 * 1024
_PIECE = 64 * 1024


class HostFiles:
    """Fenced file operations on ``root``; every method is async and refuses escapes."""

    def __init__(
        self,
        root: Path,
        *,
        max_read: int = DEFAULT_MAX_READ,
        secrets: SecretFiles | None = None,
    ) -> None:
        self.fence = Fence(root)
        self.max_read = max_read
        self.secrets = secrets or SecretFiles()

    @property
    def root(self) -> Path:
        return self.fence.root

    async def _off(self, path: str, fn: Callable[..., _T], *args: Any) -> _T:
        """Run blocking ``fn`` in a worker thread; an OSError becomes a SandboxError."""
        try:
            return await asyncio.to_thread(fn, *args)
        except FileNotFoundError as exc:
            raise NotFoundError(f"{path!r} does not exist", path=path) from exc
        except (IsADirectoryError, NotADirectoryError) as exc:
            raise WrongKindError(f"{path!r}: {exc.strerror}", path=path) from exc
        except OSError as exc:
            raise SandboxError(
                f"{path!r}: {exc.strerror or exc}", path=path, errno=exc.errno
            ) from exc

    def split(self, path: str) -> tuple[str, ...]:
        return split_path(path, root=PurePosixPath(self.fence.root))

    # -- reading ------------------------------------------------------------------------

    def check_secret(self, parts: tuple[str, ...]) -> None:
        """Refuse a deny-listed secret file (SecretFileError)."""
        shown = "/".join(parts)
        reason = self.secrets.reason(shown)
        if reason is not None:
            raise SecretFileError(f"{shown!r} is {reason}", path=shown)

    def _read_bytes(self, parts: tuple[str, ...]) -> bytes:
        # The asked-for path and, through symlinks, the file it leads to: both must pass.
        self.check_secret(parts)
        fd, info = self.fence.open_regular(parts, follow_final=True, check=self.check_secret)
        with os.fdopen(fd, "rb") as handle:
            if info.st_size > self.max_read:
                raise FileTooLargeError(
                    f"{'/'.join(parts)!r} is {info.st_size} bytes; the limit is {self.max_read}",
                    path="/".join(parts),
                    size=info.st_size,
                    limit=self.max_read,
                )
            data = handle.read(self.max_read + 1)
        if len(data) > self.max_read:
            raise FileTooLargeError(
                f"{'/'.join(parts)!r} grew past the limit of {self.max_read} bytes",
                path="/".join(parts),
                limit=self.max_read,
            )
        return data

    async def read_bytes(self, path: str) -> bytes:
        return await self._off(path, self._read_bytes, self.split(path))

    async def read_file(self, path: str) -> str:
        data = await self.read_bytes(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotTextError(
                f"{path!r} is not UTF-8 text (byte {exc.start})", path=path, byte=exc.start
            ) from exc

    def _read_lines(self, parts: tuple[str, ...], first: int, count: int | None) -> LineRange:
        """Stream to line ``first`` and return up to ``count`` lines (any file size), at most
        :data:`MAX_RANGE_BYTES` of them; the rest of the file is only counted."""
        shown = "/".join(parts)
        self.check_secret(parts)
        fd, info = self.fence.open_regular(parts, follow_final=True, check=self.check_secret)
        kept: list[bytes] = []
        used = 0
        capped = False
        newlines = 0  # line breaks read so far: the current piece is on line newlines + 1
        last = first - 1
        ends_open = False  # the last piece read did not end a line
        with os.fdopen(fd, "rb") as handle:
            while count is None or newlines + 1 < first + count:
                piece = handle.readline(_PIECE)
                if not piece:
                    break
                number = newlines + 1
                ends_open = not piece.endswith(b"\n")
                newlines += not ends_open
                if number < first:
                    continue
                if used + len(piece) > MAX_RANGE_BYTES:
                    capped = True
                    if not kept:  # one line over the cap: its head (cut at a character)
                        kept.append(piece[:MAX_RANGE_BYTES])
                        last = number
                    break
                kept.append(piece)
                used += len(piece)
                last = number
            total: int | None = None
            if info.st_size <= MAX_COUNTED_FILE:
                while rest := handle.read(_PIECE):
                    newlines += rest.count(b"\n")
                    ends_open = not rest.endswith(b"\n")
                total = newlines + (1 if ends_open else 0)
        decoder = codecs.getincrementaldecoder("utf-8")()
        try:
            text = decoder.decode(b"".join(kept), final=not capped)
        except UnicodeDecodeError as exc:
            raise NotTextError(
                f"{shown!r} is not UTF-8 text (byte {exc.start} of the range)",
                path=shown,
                byte=exc.start,
            ) from exc
        return LineRange(
            text=text, first=first, last=last, total=total, size=info.st_size, capped=capped
        )

    async def read_lines(self, path: str, first: int, count: int | None) -> LineRange:
        """Lines ``first``.. (1-based) of a text file of any size; see :class:`LineRange`."""
        if first < 1 or (count is not None and count < 1):
            raise SandboxError("read_lines needs first >= 1 and count >= 1", path=path)
        return await self._off(path, self._read_lines, self.split(path), first, count)

    # -- writing ------------------------------------------------------------------------

    def _write(self, parts: tuple[str, ...], data: bytes) -> None:
        if not parts:
            raise WrongKindError("the workspace root is a directory", path=".")
        with self.fence.parent(parts, follow_final=False, create_dirs=True) as (dir_fd, name, _):
            existing = self.fence.check_writable_target(dir_fd, name, parts)
            self.fence.replace_file(dir_fd, name, data, existing, parts)

    async def write_bytes(self, path: str, data: bytes) -> None:
        """Atomically create or replace ``path`` (parents created); never a partial file."""
        await self._off(path, self._write, self.split(path), bytes(data))

    async def write_file(self, path: str, content: str) -> None:
        await self.write_bytes(path, encode_text(content, path))

    def _edit(self, parts: tuple[str, ...], old: str, new: str, replace_all: bool) -> int:
        shown = "/".join(parts)
        if not old:
            raise EditError("edit needs a non-empty old string", path=shown)
        if not parts:
            raise WrongKindError("the workspace root is a directory", path=".")
        self.check_secret(parts)  # an edit's errors would tell what the file holds
        with self.fence.parent(parts, follow_final=False) as (dir_fd, name, _):
            existing = self.fence.check_writable_target(dir_fd, name, parts)
            if existing is None:
                raise NotFoundError(f"{shown!r} does not exist", path=shown)
            data = self._read_bytes(parts)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise NotTextError(f"{shown!r} is not UTF-8 text", path=shown) from exc
            count = text.count(old)
            if count == 0:
                raise EditError(f"old string not found in {shown!r}", path=shown)
            if count > 1 and not replace_all:
                raise EditError(
                    f"old string occurs {count} times in {shown!r}; give more context "
                    "or set replace_all",
                    path=shown,
                    count=count,
                )
            updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
            self.fence.replace_file(dir_fd, name, encode_text(updated, shown), existing, parts)
            return count if replace_all else 1

    async def edit(self, path: str, old: str, new: str, *, replace_all: bool = False) -> int:
        """Replace exact text; returns how many occurrences were replaced."""
        return await self._off(path, self._edit, self.split(path), old, new, replace_all)

    # -- directories and metadata -------------------------------------------------------

    def _list(self, parts: tuple[str, ...]) -> list[DirEntry]:
        fd = self.fence.open_dir(parts)
        try:
            entries: list[DirEntry] = []
            with os.scandir(fd) as it:
                for entry in it:
                    # Newline or non-UTF-8 names cannot be given back as paths: they are
                    # listed escaped and marked, never left out.
                    info = entry.stat(follow_symlinks=False)
                    kind = kind_of(info.st_mode)
                    entries.append(
                        DirEntry(
                            name=escape_name(entry.name),
                            kind=kind,
                            size=info.st_size if kind == "file" else 0,
                            addressable=is_safe_name(entry.name),
                        )
                    )
        finally:
            os.close(fd)
        return sorted(entries, key=lambda e: e.name)

    async def list_dir(self, path: str = ".") -> list[DirEntry]:
        return await self._off(path, self._list, self.split(path))

    def _stat(self, parts: tuple[str, ...]) -> FileStat:
        with self.fence.parent(parts, follow_final=False) as (dir_fd, name, _):
            if name:
                try:
                    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                except FileNotFoundError:
                    raise NotFoundError(
                        f"{'/'.join(parts)!r} does not exist", path="/".join(parts)
                    ) from None
            else:
                info = os.fstat(dir_fd)
        kind = kind_of(info.st_mode)
        return FileStat(
            path="/".join(parts) or ".",
            kind=kind,
            size=info.st_size if st.S_ISREG(info.st_mode) else 0,
            mtime=info.st_mtime,
        )

    async def stat(self, path: str) -> FileStat:
        """Metadata of ``path`` itself (a symlink is reported as one, not followed)."""
        return await self._off(path, self._stat, self.split(path))

    async def remove(self, path: str) -> None:
        """Remove a file, a symlink (never its target) or a directory tree."""
        await self._off(path, self.fence.remove, self.split(path))

    async def host_dir(self, path: str) -> Path:
        """The verified host path of directory ``path`` (for a command's cwd)."""
        parts = self.split(path)
        if not parts:
            return self.root  # the common case needs no walk (and no thread hop)
        return await self._off(path, self.fence.host_path, parts)

    # -- search -------------------------------------------------------------------------

    async def search(
        self,
        pattern: str,
        *,
        path: str = ".",
        glob: str | None = None,
        max_results: int = 200,
        env: Mapping[str, str],
    ) -> SearchResults:
        """Matches of ``pattern``; deny-listed secret files are skipped and named as skipped."""
        if glob and "\x00" in glob:
            raise SearchError("invalid glob: a file name never holds a NUL byte", glob=glob)
        parts = self.split(path)
        fd = await self._off(path, self.fence.open_dir, parts)
        try:
            prefix = await self._off(path, self._logical, parts)
            rg = find_ripgrep(env.get("PATH"), outside=self.root)
            is_secret = self.secrets.reason
            if rg is not None:
                return await search_ripgrep(
                    rg, fd, prefix, pattern, glob, max_results, env, is_secret=is_secret
                )
            return await self._off(
                path, search_python, fd, prefix, pattern, glob, max_results, is_secret
            )
        finally:
            os.close(fd)

    def _logical(self, parts: tuple[str, ...]) -> tuple[str, ...]:
        with self.fence.parent(parts, follow_final=True) as (_, _name, logical):
            return logical
