"""Tiers 2 and 3: one locked-down, long-lived container per sandbox (runc or gVisor runsc).

Commands run as ``exec`` in the container; file operations run host-side through the same
fence on the bind-mounted workspace (fast, and symlink-safe exactly like the local tier).
The docker SDK is imported lazily and every call to it runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Unpack

from driveros._errors import SandboxError
from driveros.sandbox._base import SandboxBase
from driveros.sandbox._channel import run_on_channel
from driveros.sandbox._docker_exec import DockerChannel
from driveros.sandbox._docker_folders import (
    check_folder_target,
    folder_volumes,
    guard_volumes,
)
from driveros.sandbox._docker_options import (
    DEFAULT_IMAGE,
    DockerSandboxFields,
    DockerSandboxOptions,
)
from driveros.sandbox._docker_reaper import owner_labels, reap_orphans
from driveros.sandbox._env import (
    DEFAULT_PATH,
    FRESH_CODE,
    GIT_NEUTRAL,
    NON_INTERACTIVE,
    TOOLCHAIN_PATHS,
    VENV_PATHS,
    allowed_environment,
    check_command,
    command_environment,
    dotenv_assignments,
)
from driveros.sandbox._folders import Folders
from driveros.sandbox._guards import refuse_made_hooks, unguarded_roots
from driveros.sandbox._protocol import (
    CommandResult,
    PolicyError,
    RuntimeMissingError,
)

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_IMAGE", "DockerSandbox", "DockerSandboxOptions"]

#: Where the workspace appears inside the container.
CONTAINER_WORKSPACE = "/workspace"
#: The uid:gid commands run as when the workspace belongs to root (distroless' "nonroot").
SANDBOX_UID = 65532

RUNSC_HELP = (
    "the Docker daemon has no 'runsc' (gVisor) runtime, which untrusted code requires; "
    "refusing to start. Install it (Debian/Ubuntu: `apt-get install runsc`, otherwise "
    "https://gvisor.dev/docs/user_guide/install/), register it in /etc/docker/daemon.json "
    'as {"runtimes": {"runsc": {"path": "/usr/bin/runsc"}}} and reload the daemon '
    "(`kill -HUP $(pidof dockerd)` or `systemctl reload docker`)"
)


class DockerSandbox(SandboxBase):
    """A container per sandbox: no network, read-only root, only the workspace writable.

    ``runtime="runc"`` isolates processes (for code that is not hostile); ``untrusted=True``
    always uses gVisor (``runsc``) and fails closed, before any command, when the daemon
    lacks it. Commands run as the workspace owner's uid:gid so files stay theirs.
    ``extra_mounts`` maps host paths to container paths, mounted read-only. ``written_in``:
    as for :class:`LocalSandbox` (the set-id sweep of ``aclose()`` looks only there).
    """

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        options: DockerSandboxOptions | None = None,
        /,
        **fields: Unpack[DockerSandboxFields],
    ) -> None:
        given = dataclasses.replace(options or DockerSandboxOptions(), **fields)
        super().__init__(workspace, given)
        self.options = given
        untrusted = given.untrusted
        if untrusted and given.runtime == "runc":
            log.info("untrusted=True: using gVisor (runsc) instead of the requested runc")
        self.runtime: str = "runsc" if untrusted else (given.runtime or "runc")
        self.untrusted = untrusted
        self.network = given.network
        self.image = given.image
        self.memory = given.memory
        self.cpus = given.cpus
        self.pids_limit = given.pids_limit
        self.tmp_size = given.tmp_size
        self._mounts = self._check_mounts(given.extra_mounts or {})
        self.private_copy = given.private_copy
        self._open_up = False
        user = given.user
        if user is None:
            owner = self._files.root.stat()
            user = f"{owner.st_uid}:{owner.st_gid}"
            if owner.st_uid == 0:
                # Never root in the container, whoever owns the workspace (CI, containers).
                user = f"{SANDBOX_UID}:{SANDBOX_UID}"
                self._open_up = given.private_copy
        elif user.split(":", 1)[0] in ("0", "root"):
            raise PolicyError("the docker sandbox never runs commands as root (user=0)")
        self.user = user
        self._given_env = dict(given.base_env or {})
        self._extra_env = command_environment({}, given.extra_env)
        self._env = self._environment(())
        self._base_url = given.base_url
        self._daemon_url = ""
        self._client: Any = None
        self._container_id: str | None = None
        #: The trees written in place without a ``.driveros`` to bind read-only.
        self._unguarded: list[Path] = []

    def _environment(self, dotenv: Iterable[tuple[str, str]]) -> dict[str, str]:
        """The container's environment: the allowlist, less host paths, plus ``extra_env``."""
        env = {
            "PATH": DEFAULT_PATH,
            "HOME": "/tmp",  # noqa: S108 - the container's private tmpfs
            "TMPDIR": "/tmp",  # noqa: S108
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
        }
        allowed = allowed_environment(self._given_env, workspace=self.workspace, dotenv=dotenv)
        host_paths = {"PATH", *TOOLCHAIN_PATHS, *VENV_PATHS}
        env.update({k: v for k, v in allowed.items() if k not in host_paths})
        env.update(NON_INTERACTIVE)
        env.update(FRESH_CODE)
        env.update(GIT_NEUTRAL)
        env.update(self._extra_env)
        return env

    @property
    def contained(self) -> bool:
        """Whether what this sandbox runs is contained: a container with the network off."""
        return not self.network

    @property
    def tier(self) -> str:
        return f"docker-{self.runtime}"

    @property
    def container_id(self) -> str | None:
        return self._container_id

    def _check_mounts(self, mounts: Mapping[str | os.PathLike[str], str]) -> dict[str, str]:
        checked: dict[str, str] = {}
        for source, target in mounts.items():
            host = os.path.realpath(source)
            pure = PurePosixPath(target)
            ws = PurePosixPath(CONTAINER_WORKSPACE)
            if not pure.is_absolute() or pure == PurePosixPath("/") or ".." in pure.parts:
                raise PolicyError(f"extra mount target {target!r} must be an absolute path")
            if pure == ws or ws in pure.parents or pure in ws.parents or pure.parts[1] == "tmp":
                raise PolicyError(f"extra mount target {target!r} overlaps /workspace or /tmp")
            if not Path(host).exists():
                raise SandboxError(f"extra mount source {str(source)!r} does not exist")
            checked[host] = str(pure)
        return checked

    def add_folder(
        self,
        at: str | os.PathLike[str],
        root: str | os.PathLike[str] | None = None,
        *,
        writable: bool = False,
        read_only_binds: Mapping[str, str] | None = None,
    ) -> None:
        """As :meth:`SandboxBase.add_folder`; the container also binds it at ``at`` (so it
        is added before :meth:`start`: a running container gets no new mount)."""
        if self._container_id is not None:
            raise SandboxError("an added folder is bound when the container starts: add it first")
        check_folder_target(os.fspath(at))
        super().add_folder(at, root, writable=writable, read_only_binds=read_only_binds)

    # -- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        """Check the daemon, runtime and image, reap orphans, start the container."""
        self._check_open()
        async with self._start_lock:
            if self._container_id is not None:
                return
            self._env = self._environment(
                await asyncio.to_thread(dotenv_assignments, self.workspace)
            )
            if self._open_up and await asyncio.to_thread(open_up_private_copy, self.workspace):
                self._files.fence.others_bits = 0o006  # what the file tools create, too
            await asyncio.to_thread(open_up_views, self._folders)
            self._client = await asyncio.to_thread(self._connect)
            await asyncio.to_thread(self._preflight)
            await self._watchdog.start()
            try:
                container = await self._create_uncancellably()
                self._watchdog.track_container(container.id, self._daemon_url)
                await asyncio.to_thread(self._start_container, container)
            except BaseException:
                await self._watchdog.aclose()
                raise
            self._container_id = str(container.id)

    def _connect(self) -> Any:
        import docker
        from docker.constants import DEFAULT_UNIX_SOCKET
        from docker.errors import DockerException
        from docker.utils import kwargs_from_env

        # Like the docker CLI: an explicit base_url, else DOCKER_HOST, else the local socket.
        # The watchdog needs the real address (client.api.base_url is a placeholder).
        self._daemon_url = (
            self._base_url or kwargs_from_env().get("base_url") or DEFAULT_UNIX_SOCKET
        )
        try:
            client = (
                docker.DockerClient(base_url=self._base_url)
                if self._base_url
                else docker.from_env()
            )
            client.ping()
        except DockerException as exc:
            raise RuntimeMissingError(
                f"cannot reach the Docker daemon ({exc}); start it (`dockerd`) or use the "
                "local sandbox",
            ) from exc
        return client

    def _preflight(self) -> None:
        from docker.errors import ImageNotFound

        api = self._client.api
        runtimes = api.info().get("Runtimes") or {}
        if self.runtime not in runtimes:
            if self.runtime == "runsc":
                raise RuntimeMissingError(RUNSC_HELP, runtime="runsc")
            raise RuntimeMissingError(
                f"the Docker daemon has no {self.runtime!r} runtime", runtime=self.runtime
            )
        try:
            api.inspect_image(self.image)
        except ImageNotFound as exc:
            raise RuntimeMissingError(
                f"sandbox image {self.image!r} not found; build it with `make sandbox-image`",
                image=self.image,
            ) from exc
        reap_orphans(api)

    async def _create_uncancellably(self) -> Any:
        """Create the container; if canceled meanwhile, remove it before re-raising."""
        task = asyncio.ensure_future(asyncio.to_thread(self._create_container))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                container = await task
                await asyncio.to_thread(container.remove, force=True)
            raise

    def _guard_mounts(self) -> dict[str, dict[str, str]]:
        """Read-only bind mounts over every ``.git`` in the workspace (any spelling, any
        depth; ``node_modules`` skipped) and over its ``.driveros``, as the local tier binds
        them (docs/sandbox.md, "The local boundary"). The workspace is mounted writable, so
        without these a command could write a git hook or ``core.fsmonitor`` that runs on the
        user's next ``git status``, repoint a ``.git`` file, or plant the
        ``.driveros/hooks.toml`` a trusted workspace's next run runs on the host. Where there
        is no ``.driveros`` (and outside a review view), a ``hooks.toml`` made there is
        renamed aside at close.
        """
        in_place = [self.workspace] if self._written_in is None else []
        self._unguarded = unguarded_roots([*in_place, *self._folders.written_in_place()])
        return guard_volumes(self.workspace, CONTAINER_WORKSPACE)

    def _create_container(self) -> Any:
        volumes = {str(self.workspace): {"bind": CONTAINER_WORKSPACE, "mode": "rw"}}
        volumes.update(self._guard_mounts())
        if self.options.git_link is not None:  # over the guard of the copy's own .git
            dot = f"{CONTAINER_WORKSPACE}/.git"
            volumes = {src: v for src, v in volumes.items() if v["bind"] != dot}
            volumes[os.fspath(self.options.git_link)] = {"bind": dot, "mode": "ro"}
        volumes.update({src: {"bind": dst, "mode": "ro"} for src, dst in self._mounts.items()})
        volumes.update(folder_volumes(self._folders))  # --add-dir: docs/docker.md
        container = self._client.containers.create(
            self.image,
            command=["sleep", "infinity"],
            init=True,
            user=self.user,
            working_dir=CONTAINER_WORKSPACE,
            environment=self._env,
            network_mode="bridge" if self.network else "none",
            read_only=True,
            tmpfs={"/tmp": f"rw,nosuid,nodev,size={self.tmp_size},mode=1777"},  # noqa: S108
            volumes=volumes,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges:true"],
            pids_limit=self.pids_limit,
            mem_limit=self.memory,
            memswap_limit=self.memory,
            nano_cpus=int(self.cpus * 1e9),
            runtime=self.runtime,
            labels=owner_labels(),
            hostname="sandbox",
        )
        return container

    def _start_container(self, container: Any) -> None:
        try:
            container.start()
        except Exception as exc:
            with contextlib.suppress(Exception):
                container.remove(force=True)
            raise SandboxError(
                f"the sandbox container did not start ({self.runtime}): {exc}",
                runtime=self.runtime,
            ) from exc

    async def aclose(self) -> None:
        """Stop sessions and processes, remove the container; idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._close_children()
        cid, self._container_id = self._container_id, None
        if cid is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self._client.api.remove_container, cid, force=True)
            self._watchdog.untrack_container(cid)
        for moved in await asyncio.to_thread(refuse_made_hooks, self._unguarded):
            log.warning("a command made %s (hooks run outside the sandbox): not used", moved)
        await self._strip_setid()
        await self._watchdog.aclose()
        if self._client is not None:
            await asyncio.to_thread(self._client.close)

    # -- commands -----------------------------------------------------------------------

    async def _workdir(self, cwd: str) -> str:
        await self._files.host_dir(cwd)  # exists, is a directory, reachable through the fence
        parts = self._files.split(cwd)
        return str(PurePosixPath(CONTAINER_WORKSPACE, *parts))

    async def _open_command(
        self, command: str, cwd: str, env: Mapping[str, str] | None
    ) -> DockerChannel:
        await self.start()
        self._check_open()
        assert self._container_id is not None
        return await DockerChannel.start(
            self._client.api,
            self._container_id,
            ["/bin/sh", "-c", command],
            workdir=await self._workdir(cwd),
            env=command_environment(self._env, env),
            user=self.user,
        )

    async def run(
        self,
        command: str,
        *,
        cwd: str = ".",
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stdin: bytes | None = None,
    ) -> CommandResult:
        """Run ``command`` with ``/bin/sh -c`` as an exec in the sandbox container."""
        self._check_open()
        check_command(command)
        channel = await self._open_command(command, cwd, env)
        return await run_on_channel(
            channel,
            stdin=stdin,
            timeout=self.default_timeout if timeout is None else timeout,
            cap=self.output_cap,
        )

    def _pwd_to_rel(self, pwd: str) -> str | None:
        path, root = PurePosixPath(pwd), PurePosixPath(CONTAINER_WORKSPACE)
        if path == root:
            return "."
        return path.relative_to(root).as_posix() if root in path.parents else None

    def _search_env(self) -> Mapping[str, str]:
        return {"PATH": DEFAULT_PATH, "LANG": "C.UTF-8"}


def open_up_private_copy(root: Path) -> bool:
    """Let :data:`SANDBOX_UID` write a root-owned scratch copy: ``o+rwX`` on its tree.

    Only for a copy driveros made (``private_copy=True``) and only when an ancestor directory
    is private to root (the scratch directory is ``0700``): no other user can reach the tree,
    so "other" here means the container's uid alone. Otherwise nothing changes and commands
    can only write where the tree already lets them. Symlinks are never followed.
    """
    if not any(p.stat().st_uid == 0 and not p.stat().st_mode & 0o077 for p in root.parents):
        log.warning("%s is not under a private directory; leaving its permissions alone", root)
        return False
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    for _top, dirs, files, top_fd in os.fwalk(root, follow_symlinks=False):
        for name in [".", *dirs, *files]:
            with contextlib.suppress(OSError):
                info = os.stat(name, dir_fd=top_fd, follow_symlinks=False)
                if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
                    continue  # symlinks, devices, FIFOs: never touched
                fd = os.open(name, flags, dir_fd=top_fd)
                try:
                    searchable = stat.S_ISDIR(info.st_mode) or info.st_mode & 0o111
                    mode = stat.S_IMODE(info.st_mode) & ~(stat.S_ISUID | stat.S_ISGID)
                    os.fchmod(fd, mode | 0o006 | (0o001 if searchable else 0))
                finally:
                    os.close(fd)
    return True


def open_up_views(folders: Folders) -> None:
    """:func:`open_up_private_copy` for each writable folder's root-owned review view, so the
    container's unprivileged uid can write it (it changes nothing outside a directory private
    to root). Blocking."""
    for folder in folders:
        if folder.writable and not folder.in_place:
            with contextlib.suppress(OSError):
                if folder.files.root.stat().st_uid == 0:
                    open_up_private_copy(folder.files.root)
