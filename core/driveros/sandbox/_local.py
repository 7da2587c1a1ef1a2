"""Tier 1: host subprocesses for code we wrote and trust, behind the symlink-safe fence."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Self

from driveros.sandbox._channel import Channel, LocalChannel
from driveros.sandbox._env import base_environment, check_command, command_environment
from driveros.sandbox._files import DEFAULT_MAX_READ, HostFiles
from driveros.sandbox._hostproc import run_host_command
from driveros.sandbox._processes import BackgroundProcess, ProcessHost
from driveros.sandbox._protocol import (
    DEFAULT_OUTPUT_CAP,
    DirEntry,
    FileStat,
    RunResult,
    SandboxClosedError,
    SearchMatch,
)
from driveros.sandbox._session import ShellSession
from driveros.sandbox._watchdog import Watchdog

log = logging.getLogger(__name__)

#: The timeout applied when ``run()`` is given none.
DEFAULT_TIMEOUT = 600.0


class LocalSandbox:
    """Commands run as host subprocesses; files are reached only through the fence.

    ``base_env`` is the environment commands start from: ``None`` (the default) gives a
    minimal one (PATH, LANG, TERM=dumb, ... and HOME, a private scratch directory removed
    by ``aclose()``); pass ``os.environ`` or any mapping to hand yours through; it is
    scrubbed of provider keys and other secrets either way.
    Commands run with ``/bin/sh -c`` in their own process group, never inherit stdout, and
    are killed whole on timeout, cancellation, ``aclose()`` or the owner's death.
    """

    tier = "local"

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        *,
        base_env: Mapping[str, str] | None = None,
        default_timeout: float | None = DEFAULT_TIMEOUT,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        max_read: int = DEFAULT_MAX_READ,
        shell: str = "/bin/sh",
    ) -> None:
        self._files = HostFiles(Path(workspace), max_read=max_read)
        self._env = base_environment(base_env)
        self._home: str | None = None
        self.default_timeout = default_timeout
        self.output_cap = output_cap
        self.shell = shell
        self._watchdog = Watchdog()
        self._closed = False
        self._start_lock = asyncio.Lock()
        self._sessions: list[ShellSession] = []
        self._processes = ProcessHost(self._open_command, output_cap=output_cap)

    @property
    def workspace(self) -> Path:
        return self._files.root

    @property
    def env(self) -> dict[str, str]:
        """A copy of the (scrubbed) environment commands start from."""
        return dict(self._env)

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

    async def start(self) -> None:
        """Start the watchdog and make the scratch HOME (also done by the first command)."""
        self._check_open()
        async with self._start_lock:
            await self._watchdog.start()
            if "HOME" not in self._env:
                self._home = await asyncio.to_thread(tempfile.mkdtemp, prefix="driveros-home-")
                self._env["HOME"] = self._home

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxClosedError("this sandbox was closed", workspace=str(self.workspace))

    async def run(
        self,
        command: str,
        *,
        cwd: str = ".",
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stdin: bytes | None = None,
    ) -> RunResult:
        """Run ``command`` with ``/bin/sh -c`` in the workspace directory ``cwd``.

        ``timeout`` defaults to ``default_timeout``; ``env`` adds to (and may override) the
        base environment; ``stdin`` is fed then closed (None: stdin is /dev/null).
        """
        check_command(command)
        await self.start()
        workdir = await self._files.host_dir(cwd)
        return await run_host_command(
            [self.shell, "-c", command],
            cwd=workdir,
            env=command_environment(self._env, env),
            timeout=self.default_timeout if timeout is None else timeout,
            stdin=stdin,
            cap=self.output_cap,
            watchdog=self._watchdog,
        )

    # -- sessions and background processes ---------------------------------------------

    async def _open_command(
        self, command: str, cwd: str, env: Mapping[str, str] | None
    ) -> LocalChannel:
        await self.start()
        workdir = await self._files.host_dir(cwd)
        return await LocalChannel.start(
            [self.shell, "-c", command],
            cwd=workdir,
            env=command_environment(self._env, env),
            watchdog=self._watchdog,
        )

    def _pwd_to_rel(self, pwd: str) -> str | None:
        path = PurePosixPath(pwd)
        root = PurePosixPath(self.workspace)
        if path == root:
            return "."
        return path.relative_to(root).as_posix() if root in path.parents else None

    async def open_session(
        self, *, cwd: str = ".", env: Mapping[str, str] | None = None
    ) -> ShellSession:
        """A persistent shell: cwd and exports carry over between its commands."""
        self._check_open()
        self._files.split(cwd)
        extra = dict(env or {})

        async def opener(rel: str) -> Channel:
            return await self._open_command(f"exec {self.shell}", rel, extra)

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

    async def read_file(self, path: str) -> str:
        self._check_open()
        return await self._files.read_file(path)

    async def read_bytes(self, path: str) -> bytes:
        self._check_open()
        return await self._files.read_bytes(path)

    async def write_file(self, path: str, content: str) -> None:
        self._check_open()
        await self._files.write_file(path, content)

    async def write_bytes(self, path: str, data: bytes) -> None:
        self._check_open()
        await self._files.write_bytes(path, data)

    async def edit(self, path: str, old: str, new: str, *, replace_all: bool = False) -> int:
        self._check_open()
        return await self._files.edit(path, old, new, replace_all=replace_all)

    async def list_dir(self, path: str = ".") -> list[DirEntry]:
        self._check_open()
        return await self._files.list_dir(path)

    async def search(
        self, pattern: str, *, path: str = ".", glob: str | None = None, max_results: int = 200
    ) -> list[SearchMatch]:
        self._check_open()
        return await self._files.search(
            pattern, path=path, glob=glob, max_results=max_results, env=self._env
        )

    async def stat(self, path: str) -> FileStat:
        self._check_open()
        return await self._files.stat(path)

    async def remove(self, path: str) -> None:
        self._check_open()
        await self._files.remove(path)

    async def aclose(self) -> None:
        """Kill everything this sandbox started; idempotent."""
        if self._closed:
            return
        self._closed = True
        sessions, self._sessions = self._sessions, []
        await asyncio.gather(*(s.aclose() for s in sessions), return_exceptions=True)
        await self._processes.aclose()
        await self._watchdog.aclose()
        if self._home is not None:
            await asyncio.to_thread(shutil.rmtree, self._home, True)
