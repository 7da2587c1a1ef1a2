"""What both tiers share: fenced host-side files, sessions, the process host, lifecycle."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

from driveros._errors import SandboxError
from driveros.sandbox._channel import Channel
from driveros.sandbox._env import check_command
from driveros.sandbox._files import HostFiles
from driveros.sandbox._folders import Folders
from driveros.sandbox._options import SandboxOptions
from driveros.sandbox._processes import BackgroundProcess, ProcessHost
from driveros.sandbox._protocol import (
    DirEntry,
    FileStat,
    LineRange,
    SandboxClosedError,
    SearchResults,
)
from driveros.sandbox._secrets import SecretFiles
from driveros.sandbox._session import ShellSession
from driveros.sandbox._setid import strip_new_setid
from driveros.sandbox._watchdog import Watchdog


class SandboxBase:
    """The tier-independent half of a sandbox; subclasses start things and run commands."""

    #: The shell a session runs (inside the tier: on the host or in the container).
    session_shell = "/bin/sh"

    def __init__(self, workspace: str | os.PathLike[str], options: SandboxOptions) -> None:
        self._files = HostFiles(
            Path(workspace),
            max_read=options.max_read,
            secrets=SecretFiles(allow=tuple(options.allow_secret_files)),
        )
        self.default_timeout = options.default_timeout
        self.output_cap = options.output_cap
        self._watchdog = Watchdog()
        self._start_lock = asyncio.Lock()
        self._closed = False
        self._sessions: list[ShellSession] = []
        self._processes = ProcessHost(self._open_command, output_cap=self.output_cap)
        #: When this sandbox was made: set-id bits on files changed since are cleared on close.
        self._born_ns = time.time_ns()
        #: Where every file written in the workspace also is (a view's upper layer), if known.
        written_in = options.written_in
        self._written_in = None if written_in is None else Path(written_in)
        #: Added folders the file operations reach by absolute path (``--add-dir``).
        self._folders = Folders()

    # -- what a tier provides -----------------------------------------------------------

    async def start(self) -> None:
        raise NotImplementedError

    async def _open_command(self, command: str, cwd: str, env: Mapping[str, str] | None) -> Channel:
        """Start ``/bin/sh -c command`` in the workspace-relative ``cwd`` as a channel."""
        raise NotImplementedError

    def _pwd_to_rel(self, pwd: str) -> str | None:
        """A shell's ``$PWD`` as a workspace-relative path (None: outside the workspace)."""
        raise NotImplementedError

    def _search_env(self) -> Mapping[str, str]:
        """The environment host-side ripgrep runs with (its PATH decides whether it exists)."""
        raise NotImplementedError

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def workspace(self) -> Path:
        return self._files.root

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        raise NotImplementedError

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxClosedError("this sandbox was closed", workspace=str(self.workspace))

    async def _strip_setid(self) -> None:
        """Clear set-id bits commands left on files in the workspace and in the writable
        added folders written in place (part of ``aclose()``; a folder's review view is
        applied with git's modes, which have no set-id bits)."""
        await asyncio.to_thread(
            strip_new_setid, self.workspace, self._born_ns, written_in=self._written_in
        )
        for root in self._folders.written_in_place():
            await asyncio.to_thread(strip_new_setid, root, self._born_ns)

    async def _close_children(self) -> None:
        """End every session and background process (the first step of ``aclose()``)."""
        sessions, self._sessions = self._sessions, []
        await asyncio.gather(*(s.aclose() for s in sessions), return_exceptions=True)
        await self._processes.aclose()

    # -- sessions and background processes ---------------------------------------------

    async def open_session(
        self, *, cwd: str = ".", env: Mapping[str, str] | None = None
    ) -> ShellSession:
        """A persistent shell: cwd and exports carry over between its commands."""
        self._check_open()
        self._files.split(cwd)
        extra = dict(env or {})

        async def opener(rel: str) -> Channel:
            return await self._open_command(f"exec {self.session_shell}", rel, extra)

        session = ShellSession(
            opener,
            self._pwd_to_rel,
            cwd=cwd,
            default_timeout=self.default_timeout,
            output_cap=self.output_cap,
        )
        self._sessions.append(session)
        return session

    async def start_process(
        self, command: str, *, cwd: str = ".", env: Mapping[str, str] | None = None
    ) -> BackgroundProcess:
        """Start a long-lived process; read its output with ``read()``, end it with ``stop()``."""
        self._check_open()
        check_command(command)
        return await self._processes.start(command, cwd=cwd, env=dict(env) if env else None)

    def get_process(self, process_id: str) -> BackgroundProcess:
        return self._processes.get(process_id)

    def processes(self) -> list[BackgroundProcess]:
        return self._processes.list()

    # -- files (host-side through the fence) --------------------------------------------

    def add_folder(
        self,
        at: str | os.PathLike[str],
        root: str | os.PathLike[str] | None = None,
        *,
        writable: bool = False,
        read_only_binds: Mapping[str, str] | None = None,
    ) -> None:
        """Let the file operations reach folder ``at`` (an absolute real path) besides the
        workspace: a path ``at/rel`` is ``rel`` behind ``root``'s own fence (``root``: where
        its files are, default ``at``; a review run's view of it). A read-only folder refuses
        writes, edits and removals (PolicyError). The tier's commands see it only if its
        mounts say so (see LocalSandbox). ``read_only_binds``: host paths the tier's commands
        also see read-only with it, each at the given path (bound after the folder, so one
        may lie inside it); the file operations never reach them."""
        files = HostFiles(
            Path(root if root is not None else at),
            max_read=self._files.max_read,
            secrets=self._files.secrets,
        )
        binds = tuple((Path(src), dst) for src, dst in (read_only_binds or {}).items())
        self._folders.add(Path(at), files, writable=writable, binds=binds)

    @property
    def folders(self) -> Folders:
        """The added folders (see :meth:`add_folder`)."""
        return self._folders

    @contextlib.contextmanager
    def _where(self, path: str, *, write: bool = False) -> Iterator[tuple[HostFiles, str]]:
        """The fenced files ``path`` is in and the path relative to them. An added folder's
        errors say which folder (their paths are relative to it)."""
        routed = self._folders.route(path, write=write) if self._folders else None
        if routed is None:
            yield self._files, path
            return
        folder, rel = routed
        try:
            yield folder.files, rel
        except SandboxError as exc:
            said = f"{exc} (a path inside the added folder {folder.at!r}: name it {path!r})"
            raise type(exc)(said, **exc.context) from exc

    async def read_file(self, path: str) -> str:
        self._check_open()
        with self._where(path) as (files, rel):
            return await files.read_file(rel)

    async def read_bytes(self, path: str) -> bytes:
        self._check_open()
        with self._where(path) as (files, rel):
            return await files.read_bytes(rel)

    async def read_lines(self, path: str, first: int, count: int | None) -> LineRange:
        """Lines ``first``.. of a text file of any size, streamed (see HostFiles.read_lines)."""
        self._check_open()
        with self._where(path) as (files, rel):
            return await files.read_lines(rel, first, count)

    async def write_file(self, path: str, content: str) -> None:
        self._check_open()
        with self._where(path, write=True) as (files, rel):
            await files.write_file(rel, content)

    async def write_bytes(self, path: str, data: bytes) -> None:
        self._check_open()
        with self._where(path, write=True) as (files, rel):
            await files.write_bytes(rel, data)

    async def edit(self, path: str, old: str, new: str, *, replace_all: bool = False) -> int:
        self._check_open()
        with self._where(path, write=True) as (files, rel):
            return await files.edit(rel, old, new, replace_all=replace_all)

    async def list_dir(self, path: str = ".") -> list[DirEntry]:
        self._check_open()
        with self._where(path) as (files, rel):
            return await files.list_dir(rel)

    async def search(
        self, pattern: str, *, path: str = ".", glob: str | None = None, max_results: int = 200
    ) -> SearchResults:
        """Matches (a list); ``.skipped`` names the secret files that were not searched."""
        self._check_open()
        routed = self._folders.route(path) if self._folders else None
        with self._where(path) as (files, rel):
            found = await files.search(
                pattern, path=rel, glob=glob, max_results=max_results, env=self._search_env()
            )
        return found if routed is None else routed[0].results(found)

    async def stat(self, path: str) -> FileStat:
        self._check_open()
        with self._where(path) as (files, rel):
            info = await files.stat(rel)
            return info if files is self._files else info.model_copy(update={"path": path})

    async def remove(self, path: str) -> None:
        self._check_open()
        with self._where(path, write=True) as (files, rel):
            await files.remove(rel)
