"""Tier 1: every command in one bubblewrap sandbox per LocalSandbox; files behind the fence."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import pwd
import secrets
import shutil
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Unpack

from driveros._errors import GitError, SandboxError
from driveros._finish import thread_to_the_end
from driveros._git import pinned_environment, repository_pins
from driveros._tmp import temp_root
from driveros._together import both
from driveros.sandbox._base import SandboxBase
from driveros.sandbox._bwrap import (
    HOME_SECRETS,
    Layout,
    allowed_toolchains,
    bwrap_argv,
    find_bwrap,
    interpreter_dirs,
    probe,
    sizes_tmpfs,
    toolchain_dirs,
)
from driveros.sandbox._channel import LocalChannel
from driveros.sandbox._contained import ContainedHost
from driveros.sandbox._env import (
    base_environment,
    check_command,
    command_environment,
    dotenv_assignments,
)
from driveros.sandbox._guards import guard_entries, refuse_made_hooks, unguarded_roots
from driveros.sandbox._hostproc import run_host_command
from driveros.sandbox._local_options import (
    DEFAULT_TIMEOUT,
    LocalSandboxFields,
    LocalSandboxOptions,
)
from driveros.sandbox._oneshot import (
    SHARED_PLACES,
    WorkspaceAccess,
    one_shot_bytes,
    overlay_prefix,
    overlay_works,
    read_only_env,
    scratch_prefix,
)
from driveros.sandbox._protocol import (
    CommandResult,
    LocalSandboxUnavailableError,
    PolicyError,
)

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_TIMEOUT", "LocalSandbox", "LocalSandboxOptions"]


class LocalSandbox(SandboxBase):
    """Commands run in one bubblewrap sandbox; files are reached only through the fence.

    The sandbox (docs/sandbox.md, "The local boundary") sees the system read-only, the
    workspace read-write at its own path, the private HOME and TMPDIR, the toolchains the
    allowlisted environment names (read-only) and ``read_only`` paths; never the rest of the
    user's home, ``hidden`` paths (a view's lower layer, the state directory), other users,
    ``/run``; no host process (own PID namespace), no network unless ``network``. Where
    bubblewrap cannot run, commands raise :class:`LocalSandboxUnavailableError` (the cause and
    the fix) and never run on the host; the file operations keep working.

    ``base_env`` is the environment commands start from: ``None`` (the default) gives a
    minimal one (PATH, LANG, TERM=dumb, ...); a mapping (``os.environ``) is filtered through
    the allowlist of docs/sandbox.md ("Environment"): locale, PATH without relative entries,
    toolchain locations, a few switches; never a value a workspace ``.env*`` file sets.
    ``HOME`` and ``TMPDIR`` are always private scratch directories removed by ``aclose()``.
    ``extra_env`` is set for every command as given (driveros' own settings, never a file's).
    Commands run with ``/bin/sh -c`` in their own process group, never inherit stdout, and
    are killed whole on timeout, cancellation, ``aclose()`` or the owner's death.
    ``written_in``: a directory laid out like the workspace holding every file written in
    it (an overlay view's upper layer); the set-id sweep of ``aclose()`` looks only there.
    ``discard_writes``: commands never change the workspace (a throwaway overlay, else a
    read-only bind) and the file operations that write raise :class:`PolicyError`. Settings
    are the fields of :class:`LocalSandboxOptions` (``.options``), given as one value or as
    keywords.
    """

    tier = "local"

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        options: LocalSandboxOptions | None = None,
        /,
        **fields: Unpack[LocalSandboxFields],
    ) -> None:
        given = dataclasses.replace(options or LocalSandboxOptions(), **fields)
        super().__init__(workspace, given)
        self.options = given
        self._given_env = None if given.base_env is None else dict(given.base_env)
        self._extra_env = command_environment({}, given.extra_env)
        self._env = self._environment(())
        self._scratch: str | None = None
        self._prepared = False
        self.shell = given.shell
        self.session_shell = given.shell
        self.network = given.network
        self._read_only = tuple(Path(p) for p in given.read_only)
        self._writable = tuple(Path(p) for p in given.writable)
        self._hidden = tuple(Path(p) for p in given.hidden)
        self._host: ContainedHost | None = None
        #: The trees written in place without a ``.driveros`` to bind read-only (the
        #: workspace, writable added folders): see driveros.sandbox._guards.
        self._unguarded: list[Path] = []
        self._host_error: SandboxError | None = None
        #: How commands reach the workspace, once started (see :attr:`workspace_access`).
        self._access: WorkspaceAccess = "writable"

    def _environment(self, dotenv: Iterable[tuple[str, str]]) -> dict[str, str]:
        env = base_environment(self._given_env, workspace=self.workspace, dotenv=dotenv)
        env.update(self._extra_env)
        return env

    async def _git_pins(self, env: dict[str, str]) -> list[tuple[str, str]]:
        """The repository's own program-running git keys (a ``filter.<x>.clean`` named after
        its driver, ...) pinned to nothing for every command (docs/security.md,
        "Allowlisted commands that read outside the workspace or run planted code"), and
        those of each added folder's repository (git in the folder, or its copy, reads it)."""
        git_dir, work_tree = env.get("GIT_DIR"), env.get("GIT_WORK_TREE")
        try:  # side by side: a configuration that blocks holds the start one timeout at most
            async with asyncio.TaskGroup() as group:
                reads = [
                    group.create_task(
                        repository_pins(
                            self.workspace,
                            git_dir=Path(git_dir) if git_dir else None,
                            work_tree=Path(work_tree) if work_tree else None,
                        )
                    ),
                    *(group.create_task(repository_pins(f.files.root)) for f in self._folders),
                ]
        except* GitError:  # no git on this machine: no git command can run either
            reads = []
        return list(dict.fromkeys(pin for read in reads for pin in read.result()))

    @property
    def contained(self) -> bool:
        """Whether what this sandbox runs is contained: the network is off and commands run
        in bubblewrap or not at all (where it cannot run they are refused, so this holds
        before ``start()`` too)."""
        return not self.network

    @property
    def env(self) -> dict[str, str]:
        """A copy of the (allowlisted) environment commands start from."""
        return dict(self._env)

    async def start(self) -> None:
        """Start the watchdog, make the private HOME and TMPDIR (also done by the first command)."""
        self._check_open()
        async with self._start_lock:
            await self._watchdog.start()
            if self._prepared:
                return
            # The environment (the workspace's .env, then the repository's pins read with it)
            # and the private directories, side by side.
            env, scratch = await both(self._environment_pinned(), self._private_dirs())
            home, tmp = Path(scratch, "home"), Path(scratch, "tmp")
            user_home = self._given_env.get("HOME") if self._given_env else None
            env["HOME"], env["TMPDIR"] = str(home), str(tmp)
            self._env = env
            self._prepared = True
            await self._start_host(home, tmp, user_home)

    async def _start_host(self, home: Path, tmp: Path, user_home: str | None) -> None:
        """Start the sandbox; a failure is kept and raised by every command (fail closed)."""
        path = self._env.get("PATH")
        # Never a bubblewrap the sandboxed side could have planted (it would run on the host).
        folders = [f.files.root for f in self._folders if f.writable]
        planted = [self.workspace, home, tmp, *self._writable, *self._hidden, *folders]
        try:
            layout, bwrap = await asyncio.to_thread(
                lambda: (self._layout(home, tmp, user_home), find_bwrap(path, exclude=planted))
            )
            failed: LocalSandboxUnavailableError | None = None
            if bwrap is not None and sys.platform.startswith("linux"):
                try:  # the sandbox itself is the probe; probe() only explains a failure
                    self._host = await self._launch(bwrap, layout)
                    return
                except LocalSandboxUnavailableError as exc:
                    failed = exc
            found = await asyncio.to_thread(probe, bwrap)
            if found.ok and failed is not None:
                raise failed
            raise LocalSandboxUnavailableError(
                f"the local sandbox cannot run: {found.cause}: {found.fix}; commands are "
                "refused, never run on the host",
                cause=found.cause,
                fix=found.fix,
            )
        except LocalSandboxUnavailableError as exc:
            self._host_error = exc

    async def _launch(self, bwrap: str, layout: Layout) -> ContainedHost:
        """Start bubblewrap. One that discards its writes lays the throwaway overlay first,
        and where it cannot, binds the workspace read-only (docs/sandbox.md, "Sandboxes that
        discard their writes")."""
        sized = await asyncio.to_thread(sizes_tmpfs, bwrap)
        if sized:  # /tmp, /var/tmp, /run, /dev/shm bounded: no command takes all memory
            layout = dataclasses.replace(layout, system_tmpfs_bytes=self.options.tmpfs_bytes)
        if not self.options.discard_writes:
            return await ContainedHost.start(bwrap_argv(bwrap, layout), watchdog=self._watchdog)
        assert self._scratch is not None
        # One tmpfs, its helper's, holds all it writes: nothing reaches the host's disk, and
        # together the places take at most `size` of memory (docs/sandbox.md).
        scratch = Path(self._scratch)
        size = await asyncio.to_thread(one_shot_bytes, self.options.tmpfs_bytes)
        places = {name: scratch / sub for name, sub in SHARED_PLACES.items()}
        shared = dataclasses.replace(layout, shared=places)
        prefix = overlay_prefix(self.workspace, scratch, size)
        if prefix is not None and await asyncio.to_thread(overlay_works):
            argv = [*prefix, *bwrap_argv(bwrap, shared)]
            try:
                host = await ContainedHost.start(argv, watchdog=self._watchdog)
            except LocalSandboxUnavailableError as exc:
                log.info("no overlay over %s (%s): read-only instead", self.workspace, exc)
            else:
                self._access = "overlay"
                return host
        self._env.update(read_only_env(layout.tmp))
        self._access = "read-only"
        read_only = dataclasses.replace(shared, workspace_writable=False)
        argv = [*scratch_prefix(scratch, size), *bwrap_argv(bwrap, read_only)]
        try:
            return await ContainedHost.start(argv, watchdog=self._watchdog)
        except LocalSandboxUnavailableError as exc:  # no user namespace of our own (setuid bwrap)
            log.info("no tmpfs of its own for %s (%s): one per place", self.workspace, exc)
        # Every tmpfs bounded, HOME and TMPDIR among them, each on its own.
        if sized:
            layout = dataclasses.replace(layout, tmpfs_bytes=self.options.tmpfs_bytes)
        read_only = dataclasses.replace(layout, workspace_writable=False)
        return await ContainedHost.start(bwrap_argv(bwrap, read_only), watchdog=self._watchdog)

    def _refuse_writes(self, path: str) -> None:
        if self.options.discard_writes:
            raise PolicyError(
                f"{path}: this sandbox only reads the workspace (it discards its writes)"
            )

    async def write_file(self, path: str, content: str) -> None:
        self._refuse_writes(path)
        await super().write_file(path, content)

    async def write_bytes(self, path: str, data: bytes) -> None:
        self._refuse_writes(path)
        await super().write_bytes(path, data)

    async def edit(self, path: str, old: str, new: str, *, replace_all: bool = False) -> int:
        self._refuse_writes(path)
        return await super().edit(path, old, new, replace_all=replace_all)

    async def remove(self, path: str) -> None:
        self._refuse_writes(path)
        await super().remove(path)

    @property
    def workspace_access(self) -> WorkspaceAccess:
        """How commands reach the workspace: ``writable``; or, with ``discard_writes``, through
        a throwaway ``overlay`` or ``read-only`` (known once started)."""
        return self._access

    def _layout(self, home: Path, tmp: Path, user_home: str | None) -> Layout:
        real_home = Path(user_home) if user_home and user_home.startswith("/") else None
        candidates = [*toolchain_dirs(self._env, home=real_home), *interpreter_dirs()]
        account = _account_home()
        hidden = list(self._hidden)
        if account is not None and real_home is not None and account != real_home:
            hidden += [account / rel for rel in HOME_SECRETS]
        tools = allowed_toolchains(
            candidates, home=real_home or account, workspace=self.workspace, hidden=hidden
        )
        folders = tuple((f.files.root, Path(f.at), f.writable) for f in self._folders)
        # After every folder: a bind may lie inside one (bubblewrap binds in order).
        folders += tuple((src, Path(dst), False) for f in self._folders for src, dst in f.binds)
        if self.options.discard_writes:  # nothing is written: no .git or .driveros to guard
            return Layout(
                workspace=self.workspace,
                home=home,
                tmp=tmp,
                network=self.network,
                read_only=(*tools, *self._read_only, *self._writable),
                folders=tuple((root, at, False) for root, at, _ in folders),
            )
        # Every .git read-only, except in an overlay view (its writes land in the upper layer).
        in_place = [self.workspace] if self._written_in is None else []
        protected = guard_entries(self.workspace, git=bool(in_place))
        # A writable added folder written in place is guarded as the workspace is (one on a
        # review view is not: its writes land in the view, and .git is never proposed).
        added = self._folders.written_in_place()
        protected += [entry for root in added for entry in guard_entries(root)]
        self._unguarded = unguarded_roots([*in_place, *added])
        return Layout(
            workspace=self.workspace,
            home=home,
            tmp=tmp,
            network=self.network,
            read_only=(*tools, *self._read_only),
            writable=self._writable,
            folders=folders,
            protected=tuple(protected),
        )

    def _contained(self) -> ContainedHost:
        """The running sandbox, or the reason there is none (raised)."""
        if self._host_error is not None:
            raise self._host_error
        if self._host is None or not self._host.alive:
            raise LocalSandboxUnavailableError(
                "the local sandbox is not running (it exited); commands are refused",
                workspace=str(self.workspace),
            )
        return self._host

    async def _environment_pinned(self) -> dict[str, str]:
        env = await asyncio.to_thread(lambda: self._environment(dotenv_assignments(self.workspace)))
        return pinned_environment(env, await self._git_pins(env))

    async def _private_dirs(self) -> str:
        """Make the private HOME and TMPDIR's directory; its path.

        The watchdog hears of the directory before it exists: killed at any instant after
        mkdir, the owner still leaves nothing (mkdtemp then track_dir had a gap between). The
        name is 64 random bits; mkdir is exclusive, so a name taken is never adopted."""
        base = await asyncio.to_thread(temp_root)  # $TMPDIR or an error, never another
        while True:
            scratch = str(Path(base, f"driveros-sbx-{secrets.token_hex(8)}"))
            self._watchdog.track_dir(scratch)
            try:
                await thread_to_the_end(self._make_private_dirs, scratch)
                return scratch
            except FileExistsError:
                self._watchdog.untrack_dir(scratch)

    def _make_private_dirs(self, scratch: str) -> None:
        # Recorded by the thread itself, and awaited to its end even when canceled: a canceled
        # plain to_thread made the directory after start() had gone, and aclose() never knew.
        Path(scratch).mkdir(0o700)
        self._scratch = scratch
        Path(scratch, "home").mkdir(0o700)
        Path(scratch, "tmp").mkdir(0o700)

    async def run(
        self,
        command: str,
        *,
        cwd: str = ".",
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stdin: bytes | None = None,
    ) -> CommandResult:
        """Run ``command`` with ``/bin/sh -c`` in the workspace directory ``cwd``.

        ``timeout`` defaults to ``default_timeout``; ``env`` adds to (and may override) the
        base environment; ``stdin`` is fed then closed (None: stdin is /dev/null).
        """
        check_command(command)
        await self.start()
        host = self._contained()
        workdir = await self._files.host_dir(cwd)
        return await run_host_command(
            [self.shell, "-c", command],
            cwd=workdir,
            env=command_environment(self._env, env),
            timeout=self.default_timeout if timeout is None else timeout,
            stdin=stdin,
            cap=self.output_cap,
            watchdog=self._watchdog,
            host=host,
        )

    async def _open_command(
        self, command: str, cwd: str, env: Mapping[str, str] | None
    ) -> LocalChannel:
        await self.start()
        host = self._contained()
        workdir = await self._files.host_dir(cwd)
        return await LocalChannel.start(
            [self.shell, "-c", command],
            cwd=workdir,
            env=command_environment(self._env, env),
            watchdog=self._watchdog,
            host=host,
        )

    def _pwd_to_rel(self, pwd: str) -> str | None:
        path = PurePosixPath(pwd)
        root = PurePosixPath(self.workspace)
        if path == root:
            return "."
        return path.relative_to(root).as_posix() if root in path.parents else None

    def _search_env(self) -> Mapping[str, str]:
        """The environment the host-side ``search`` finds ripgrep with: its PATH without
        entries inside the hidden paths (the real tree under a view) or the writable
        directories, whose ``rg`` a repository or a command could have planted (entries
        inside the workspace are dropped by the search itself)."""
        # The workspace too: a search in an added folder drops only that folder's entries.
        added = [f.files.root for f in self._folders if f.writable]
        shown = (*self._hidden, *self._writable, *added, self.workspace)
        roots = [Path(os.path.realpath(p)) for p in shown]
        entries = [
            entry
            for entry in self._env.get("PATH", "").split(os.pathsep)
            if not any(_inside(Path(os.path.realpath(entry)), root) for root in roots)
        ]
        return {**self._env, "PATH": os.pathsep.join(entries)}

    async def aclose(self) -> None:
        """Kill everything this sandbox started; idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._close_children()
        if self._host is not None:
            await self._host.aclose()
            for moved in await asyncio.to_thread(refuse_made_hooks, self._unguarded):
                log.warning("a command made %s (hooks run outside the sandbox): not used", moved)
        if not self.options.discard_writes:  # nothing of the tree could be written
            await self._strip_setid()
        await self._watchdog.aclose()
        if self._scratch is not None:
            await asyncio.to_thread(shutil.rmtree, self._scratch, True)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _account_home() -> Path | None:
    """The home directory of the account driveros runs as (its secrets are never bound)."""
    try:
        return Path(pwd.getpwuid(os.getuid()).pw_dir)
    except (KeyError, OSError):
        return None
