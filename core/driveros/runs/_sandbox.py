"""The sandbox of a run: its tier, its mounts, and its start."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from driveros._errors import ConfigError
from driveros.agent import Tier
from driveros.approval import ApprovalPolicy, Asker, FolderAccess, approval_policy
from driveros.config import Environment
from driveros.runs._added import folder_git_binds, git_link
from driveros.runs._options import RunSpec
from driveros.sandbox import DockerSandbox, LocalSandbox
from driveros.semantic import docker_server_mounts, server_mounts
from driveros.state import state_dir

if TYPE_CHECKING:
    from driveros.review import FolderViews, ScratchWorkspace

T = TypeVar("T")

#: Where DockerSandbox mounts the workspace (docs/docker.md): the root its commands see.
DOCKER_WORKSPACE = "/workspace"
#: Where a review run's git directory is mounted read-only in the container (docs/scratch.md).
DOCKER_GIT_DIR = "/driveros/git"


def run_tier(spec: RunSpec) -> Tier:
    """The tier the run's commands execute in (the approval policy decides by it)."""
    docker = spec.sandbox == "docker"
    return Tier(
        sandbox=spec.sandbox,
        runtime=spec.runtime if docker else None,
        network=spec.network,
        scratch=spec.review,
    )


def docker_git(
    spec: RunSpec, scratch: ScratchWorkspace | None
) -> tuple[dict[str, str], dict[str, str]]:
    """Read-only mounts and environment that let git work on a scratch worktree in docker.

    Never for untrusted runs: the git directory may hold credentials (``.git/config``).
    """
    if scratch is None or spec.untrusted:
        return {}, {}
    git = scratch.container_git(git_at=DOCKER_GIT_DIR, work_tree=DOCKER_WORKSPACE)
    return ({}, {}) if git is None else (git.mounts, git.env)


@dataclass(frozen=True)
class GitBinds:
    """What lets git work in a review run's worktree copies (:func:`git_binds`)."""

    #: Docker: the workspace copy's ``.git`` link, bound read-only over ``/workspace/.git``
    #: (instead of ``GIT_DIR`` for every command, which would name it in a folder too).
    workspace_link: Path | None = None
    #: Each writable added folder's read-only binds (host path -> sandbox path).
    folders: dict[Path, dict[str, str]] = field(default_factory=dict)


async def git_binds(
    spec: RunSpec, scratch: ScratchWorkspace | None, folders: FolderViews | None
) -> GitBinds:
    """Read-only binds that let git work in the run's worktree copies: each writable added
    folder's (:func:`~driveros.runs._added.folder_git_binds`), in both tiers, as the
    workspace's worktree git directory is bound, and in docker the workspace's ``.git``
    link. Never for untrusted runs (the git directory may hold credentials)."""
    if scratch is None or spec.untrusted:
        return GitBinds()
    link: Path | None = None
    taken: dict[str, str] = {}
    if spec.sandbox == "docker":
        taken = docker_git(spec, scratch)[0]
        made = await git_link(scratch, git_at=DOCKER_GIT_DIR, work_tree=DOCKER_WORKSPACE)
        link = made[0] if made is not None else None
    binds = await folder_git_binds(folders, taken=taken) if folders else {}
    return GitBinds(link, binds)


def read_only_in_place(spec: RunSpec) -> bool:
    """Whether the run's local sandbox discards its commands' writes: ``--approve never`` on
    the user's own tree (no ``--review``), where the only code that runs is the feed's (the
    repository's tests, its conftest.py): read-only everywhere, added folders included."""
    return spec.approve == "never" and not spec.review and spec.sandbox == "local"


def make_sandbox(
    spec: RunSpec,
    root: Path,
    env: Environment,
    scratch: ScratchWorkspace | None = None,
    views: Mapping[Path, Path] | None = None,
    *,
    discard_writes: bool = False,
    git: GitBinds | None = None,
) -> tuple[LocalSandbox | DockerSandbox, str]:
    """The sandbox over ``root``, not started yet, and the workspace root as its commands see
    it. ``views``: where a writable added folder's files are (a review run's scratch view of
    it, by the folder's path); one not named is written in place. ``discard_writes``: a
    local sandbox whose commands cannot change ``root`` (the feed run once on the user's
    tree; docker gets a scratch copy from the caller instead). ``git``: the read-only binds
    that let git work in the worktree copies (:func:`git_binds`)."""
    # A view's writes all land in its upper layer: the set-id sweep at close walks only that.
    written_in = scratch.written_layer if scratch is not None and scratch.path == root else None
    views = views or {}
    if spec.sandbox == "docker":
        git = git or GitBinds()
        mounts, git_env = docker_git(spec, scratch)
        if git.workspace_link is not None:
            git_env = {}  # the link names the git directory, for /workspace alone
        # The host's language servers, read-only (docs/semantic.md, "Tiers").
        hidden = [state_dir(env.process_env), *([scratch.workspace] if scratch else [])]
        # Never found through the workspace (its .venv/bin on PATH: a planted go or gopls).
        found = docker_server_mounts(env.process_env, hidden=[*hidden, spec.workspace])
        mounts = {**mounts, **found}
        box = DockerSandbox(
            root,
            runtime=spec.runtime,
            untrusted=spec.untrusted,
            network=spec.network,
            base_env=env.process_env,
            extra_env=git_env,
            private_copy=scratch is not None,
            extra_mounts={src: dst for src, dst in mounts.items()},
            allow_secret_files=spec.allow_secret_files,
            written_in=written_in,
            git_link=git.workspace_link,
        )
        # Every added folder read-only in a one-shot sandbox (discard_writes) and, as in the
        # local tier, under --approve never on the user's tree (only the feed's code runs).
        never = spec.approve == "never" and not spec.review
        _add_folders(box, spec, views, hidden, read_only=discard_writes or never, git=git.folders)
        return box, DOCKER_WORKSPACE
    read_only, hidden = local_mounts(spec, env, scratch)
    local = LocalSandbox(
        root,
        base_env=env.process_env,
        allow_secret_files=spec.allow_secret_files,
        written_in=written_in,
        network=spec.network,
        read_only=read_only,
        # The user's own copy of a folder under a view is never seen (as the workspace's).
        hidden=[*hidden, *(at for at in views if at.is_dir())],
        discard_writes=discard_writes,
    )
    _add_folders(local, spec, views, hidden, git=git.folders if git else None)
    return local, str(root)


def _add_folders(
    box: LocalSandbox | DockerSandbox,
    spec: RunSpec,
    views: Mapping[Path, Path],
    hidden: list[Path],
    *,
    read_only: bool = False,
    git: Mapping[Path, Mapping[str, str]] | None = None,
) -> None:
    """Give ``box`` the run's added folders (a writable one of a review run: its view, with
    ``git``'s binds for it)."""
    git = git or {}
    for added in spec.add_dirs:
        at = added.path
        if spec.review and added.writable and at not in views:
            raise ConfigError(f"--add-dir {at}:rw in a review run needs a scratch view of it")
        # Never one holding what the sandbox must not show (the state directory).
        if not any(h.is_relative_to(at) for h in hidden):
            writable = added.writable and not read_only
            box.add_folder(at, views.get(at, at), writable=writable, read_only_binds=git.get(at))


def approval_folders(spec: RunSpec, views: Mapping[Path, Path] | None) -> list[FolderAccess]:
    """The run's added folders as the approval allowlist sees them: at their own path in
    both tiers, a writable one of a review run with its files in its view (docs/approval.md,
    "Added folders")."""
    views = views or {}
    return [
        FolderAccess(
            path=str(a.path),
            writable=a.writable,
            files=str(views[a.path]) if a.path in views else None,
        )
        for a in spec.add_dirs
    ]


def run_approval(
    spec: RunSpec, workspace: str, views: Mapping[Path, Path] | None, asker: Asker | None
) -> ApprovalPolicy:
    """The run's approval policy: ``spec.approve`` for commands in the run's tier, over its
    workspace (as commands see it) and its added folders, asking ``asker`` (``ask``)."""
    return approval_policy(
        spec.approve,
        workspace=workspace,
        tier=run_tier(spec),
        asker=asker,
        timeout=spec.ask_timeout_s,
        folders=approval_folders(spec, views),
    )


async def folder_views(
    spec: RunSpec, has: FolderViews | None, pending: list[Callable[[], object]]
) -> FolderViews | None:
    """A review run's views of its writable added folders (``has``'s kept, the others made,
    their baselines deferred: each recording start goes on ``pending``); None without any."""
    writable = [a.path for a in spec.add_dirs if a.writable]
    if not writable:
        return has
    from driveros.review import FolderViews

    # As the workspace's: a view where the docker runtime can use one (docs/scratch.md).
    runtime = "runsc" if spec.untrusted else spec.runtime
    made = await FolderViews.create(
        writable,
        defer_baseline=True,
        has=has,
        container=runtime if spec.sandbox == "docker" else None,
        hide_git=spec.untrusted,
    )
    pending.append(made.start_baseline)
    return made


def local_mounts(
    spec: RunSpec, env: Environment, scratch: ScratchWorkspace | None
) -> tuple[list[Path], list[Path]]:
    """What the local tier's sandbox binds read-only beyond the toolchains (the view's
    environment directories; a worktree's git directory unless untrusted) and what it must
    never show (the user's real tree under a view, the state directory): docs/sandbox.md."""
    hidden = [state_dir(env.process_env)]
    read_only: list[Path] = []
    if scratch is not None:
        hidden.append(scratch.workspace)
        read_only += [scratch.workspace / name for name in scratch.environments]
        if not spec.untrusted and scratch.git_dir is not None:
            read_only.append(scratch.git_dir)
    # The language servers driveros installed (docs/semantic.md, "Tiers"), unless inside
    # something the sandbox must not show (driveros's own checkout as the user's tree).
    servers = server_mounts(env.process_env)
    read_only += [p for p in servers if not any(p.is_relative_to(h) for h in hidden)]
    return read_only, hidden


class SandboxStart:
    """A run's sandbox starting beside its first model request (the request needs no
    sandbox). :meth:`start` starts it (``now``: at once); the tools wait for it
    (:meth:`wait`, which starts it if need be); a start that fails ends the run
    (:meth:`racing`) as a failed start did before."""

    def __init__(self, sandbox: LocalSandbox | DockerSandbox, *, now: bool = False) -> None:
        self._sandbox = sandbox
        self._task: asyncio.Task[None] | None = None
        #: Done when the start is: its result, or its error.
        self._done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if now:
            self.start()

    def start(self) -> None:
        """Start the sandbox, unless it is starting already (or the run is over)."""
        if self._task is None and not self._done.done():
            self._task = asyncio.ensure_future(self._sandbox.start())
            self._task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        if self._done.done():
            return
        if task.cancelled():
            self._done.cancel()
        elif (exc := task.exception()) is not None:
            self._done.set_exception(exc)
        else:
            self._done.set_result(None)

    async def wait(self) -> None:
        """Until the sandbox is started (its error when the start failed)."""
        self.start()
        await asyncio.shield(self._done)

    async def racing(self, work: Awaitable[T]) -> T:
        """``work``'s result; when the start fails first, ``work`` is canceled (and waited
        for) and the start's error is raised. Canceled, it cancels ``work`` and waits for it."""
        task = asyncio.ensure_future(work)
        try:
            both: set[asyncio.Future[Any]] = {task, self._done}
            await asyncio.wait(both, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            await _cancel_and_wait(task)
            raise
        if not task.done() and not self._done.cancelled() and self._done.exception():
            await _cancel_and_wait(task)
            await self._done  # raises the start's error
        return await task

    async def aclose(self) -> None:
        """Cancel a start still running and wait for it (the run is over)."""
        if self._task is not None:
            await _cancel_and_wait(self._task)
        if not self._done.done():
            self._done.cancel()
        elif not self._done.cancelled():
            self._done.exception()  # retrieved: not logged as lost


async def _cancel_and_wait(task: asyncio.Future[Any]) -> None:
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled():
        task.exception()  # retrieved: an error after the run is over is not logged as lost
