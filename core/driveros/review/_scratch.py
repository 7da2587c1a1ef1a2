"""ScratchWorkspace: the copy of the user's workspace an agent works on, and its review."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from driveros._errors import GitError
from driveros._finish import finish_then_reraise
from driveros._git import run_git, split_z
from driveros.config import SCRATCH_MAX_FILE_SIZE_VAR, switches
from driveros.review._apply import apply_changes
from driveros.review._buffers import adopt_buffer
from driveros.review._changes import compute_changes
from driveros.review._errors import (
    NotARepositoryError,
    ReviewError,
    ScratchClosedError,
    UnknownPathError,
)
from driveros.review._files import check_relpath
from driveros.review._hooks import refuse_hook_changes
from driveros.review._kept import KeptScratch, Wanted, keep_layout, let_go_kept, reopen_layouts
from driveros.review._layout import Layout
from driveros.review._models import ApplyResult, FileChange
from driveros.review._overlay import STRATEGIES, VIEW_STRATEGIES, strategy_from_env
from driveros.review._snapshot import build, destroy

log = logging.getLogger(__name__)

#: Untracked files larger than this many bytes are left out of scratch copies.
DEFAULT_MAX_FILE_SIZE = 10 * 1024 * 1024
#: The environment variable that sets that limit (bytes, or with a K/M/G suffix; 0: none),
#: named and read in driveros.config.
MAX_FILE_SIZE_VAR = SCRATCH_MAX_FILE_SIZE_VAR
_SIZE = re.compile(r"^\s*(\d+)\s*(?:([kmg])i?b?|b)?\s*$", re.IGNORECASE)


def max_file_size_from_env(environ: Mapping[str, str] | None = None) -> int:
    """The size limit ``$DRIVEROS_SCRATCH_MAX_FILE_SIZE`` asks for, else the default.
    An unreadable value is logged and the default used."""
    raw = switches(environ).scratch_max_file_size
    if not raw:
        return DEFAULT_MAX_FILE_SIZE
    m = _SIZE.match(raw)
    if m is None:
        log.warning("ignoring %s=%r: expected a size like 10M", MAX_FILE_SIZE_VAR, raw)
        return DEFAULT_MAX_FILE_SIZE
    factor = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[(m.group(2) or "").lower()]
    return int(m.group(1)) * factor


@dataclass(frozen=True)
class ContainerGit:
    """Read-only mounts (host -> container path) and environment for git in a container."""

    mounts: dict[str, str]
    env: dict[str, str]


def _retrieve(task: asyncio.Future[None]) -> None:
    """Mark a background failure as seen: it is raised to whoever awaits the baseline."""
    if not task.cancelled():
        task.exception()


class ScratchWorkspace:
    """A private copy of a workspace; nothing reaches the user's files until applied.

    Create with ``await ScratchWorkspace.create(workspace, overlays=..., base_dir=...)`` and
    use as an async context manager (or call :meth:`aclose`). Where the machine can mount one,
    the copy is a copy-on-write overlay view of the workspace (the user's files are its
    read-only lower layer; :attr:`strategy` says ``overlay``, or ``fuse-overlay`` when made
    without root by fuse-overlayfs). Otherwise, for a git repository
    the copy is a detached ``git worktree`` of HEAD plus the user's uncommitted and untracked
    (not ignored) files; else a copy that honours ``.gitignore`` and skips ``.git``, ``.venv``,
    ``node_modules`` and ``__pycache__``. The project's environments (``ENVIRONMENT_DIRS``)
    are seen through the view read-only, or linked into a copy; never copied or reported.
    ``overlays`` (workspace-relative path -> text, e.g. unsaved editor buffers) are written
    over the copy. The baseline for :meth:`changes` is the copy as it was at creation.
    """

    def __init__(self, layout: Layout, settle: Callable[[], Awaitable[None]] | None = None) -> None:
        self._lay = layout
        #: What records a deferred baseline (None: recorded already, or started).
        self._settle = settle
        #: Recording it, once started (:meth:`start_baseline`).
        self._settling: asyncio.Future[None] | None = None
        self._closed = False
        #: path -> the agent's version (after_sha) written into the workspace.
        self._applied: dict[str, str | None] = {}
        self._last: list[FileChange] = []
        self._lock = asyncio.Lock()
        self._kept = False
        self._removed = False

    @classmethod
    async def create(
        cls,
        workspace: Path,
        *,
        overlays: Mapping[str, str] | None = None,
        base_dir: Path | None = None,
        max_file_size: int | None = None,
        strategy: str | None = None,
        container: str | None = None,
        hide_git: bool = False,
        defer_baseline: bool = False,
    ) -> ScratchWorkspace:
        """``max_file_size``: untracked files larger than this many bytes are left out (see
        :attr:`left_out`); None reads ``$DRIVEROS_SCRATCH_MAX_FILE_SIZE`` (default 10 MiB),
        0 copies everything. ``strategy``: ``auto``, ``overlay`` (a copy-on-write view when
        the machine allows it, else the fallback), ``worktree`` or ``copy``; None reads
        ``$DRIVEROS_SCRATCH_STRATEGY`` (see :attr:`strategy`). ``container``: the docker
        runtime (``runc``, ``runsc``) that will mount the copy: a view only where that runtime
        and the workspace's owner allow (see docs/review.md). ``hide_git``: a view hides the
        repository's ``.git`` (for an untrusted container). ``defer_baseline``: a view (of a
        repository or a plain directory) is returned as soon as it is mounted and records its
        baseline later, in the background, from :meth:`start_baseline` on (see
        :meth:`baseline_recorded`, which must be awaited before anything is written in
        :attr:`path`; a run's tools wait for it)."""
        limit = max_file_size_from_env() if max_file_size is None else max(0, max_file_size)
        chosen = strategy_from_env() if strategy is None else strategy
        if chosen not in STRATEGIES:
            raise ReviewError(
                f"unknown scratch strategy {chosen!r}: expected one of {', '.join(STRATEGIES)}"
            )
        ws = Path(workspace)
        if not await asyncio.to_thread(ws.is_dir):
            raise ReviewError(f"workspace is not a directory: {ws}", workspace=str(ws))
        ws = await asyncio.to_thread(ws.resolve)
        layout, settle = await build(
            ws,
            overlays=overlays or {},
            base_dir=base_dir,
            max_file_size=limit,
            strategy=chosen,
            container=container,
            hide_git=hide_git,
        )
        log.debug("scratch copy of %s at %s", ws, layout.path)
        scratch = cls(layout, settle)
        if not defer_baseline:
            try:
                await scratch.baseline_recorded()
            except BaseException:
                await scratch.aclose()
                raise
        return scratch

    # -- properties -------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """Root of the copy (the directory that stands for the user's workspace)."""
        return self._lay.path

    @property
    def workspace(self) -> Path:
        """The user's real workspace."""
        return self._lay.workspace

    @property
    def is_worktree(self) -> bool:
        """Whether the copy is a git worktree (the workspace is in a repository with a HEAD)."""
        return self._lay.strategy == "worktree"

    @property
    def strategy(self) -> str:
        """How the copy was made: ``overlay`` (a copy-on-write view of the user's repository,
        kernel overlayfs), ``fuse-overlay`` (the same view made by fuse-overlayfs, without
        root), ``worktree`` or ``copy``."""
        return self._lay.strategy

    @property
    def fallback_reason(self) -> str:
        """Why an overlay was asked for and not used ("" otherwise)."""
        return self._lay.fallback_reason

    @property
    def left_out(self) -> tuple[str, ...]:
        """Untracked files of the workspace over the size limit, not in the copy (sorted,
        workspace-relative). Not stored either: no proposal mentions them unless the agent
        writes one of those paths, and applying that meets the user's file (a conflict)."""
        prefix = self._lay.prefix
        return tuple(sorted(p[len(prefix) :] for p in self._lay.left_out if p.startswith(prefix)))

    @property
    def environments(self) -> tuple[str, ...]:
        """Environment directories (``.venv``, ``node_modules`` ...) linked into the copy.

        Each is a symlink at ``path / name`` to the user's own directory: commands in the copy
        use the project's interpreter and tools, while the links are never reported by
        :meth:`changes`, applied or committed, and :meth:`aclose` removes only the links.
        """
        return tuple(self._lay.environments)

    @property
    def git_dir(self) -> Path | None:
        """The user's git directory a worktree's ``.git`` file points into (None for a view
        or a copy): the local tier binds it read-only at the same path so that git works in
        the copy; a container uses :meth:`container_git`. It may hold credentials (remote
        URLs): never for untrusted runs."""
        return self._lay.git_common

    def container_git(self, *, git_at: str, work_tree: str) -> ContainerGit | None:
        """How a container sees this worktree's repository, or None when it cannot.

        The user's common git directory is to be mounted read-only at ``git_at`` (any
        absolute container path) and commands get ``GIT_DIR`` (this worktree's git directory
        under ``git_at``) and ``GIT_WORK_TREE=work_tree`` (where the copy is mounted). Then
        ``git status/diff/log/show`` work, while anything that writes git state fails. None
        for a plain copy, and for a workspace that is a subdirectory of its repository (the
        container sees only that subdirectory, not the worktree's top). The git directory may
        hold credentials (remote URLs, ``.git/config``): do not mount it for untrusted runs.
        """
        common, own = self._lay.git_common, self._lay.worktree_git
        if common is None or own is None or self._lay.prefix:
            return None
        try:
            rel = own.relative_to(common).as_posix()
        except ValueError:
            return None
        return ContainerGit(
            mounts={str(common): git_at},
            env={"GIT_DIR": f"{git_at.rstrip('/')}/{rel}", "GIT_WORK_TREE": work_tree},
        )

    @property
    def written_layer(self) -> Path | None:
        """For a view: the directory that holds every file written in :attr:`path` (the
        overlay's upper layer at this copy's path), laid out like it; None for a worktree or
        copy. Read it, never write it: the view is mounted over it."""
        if self._lay.strategy not in VIEW_STRATEGIES:
            return None
        return self._lay.upper / self._lay.prefix if self._lay.prefix else self._lay.upper

    @property
    def closed(self) -> bool:
        return self._closed

    # -- changes and review bookkeeping -----------------------------------------------------

    def start_baseline(self) -> None:
        """Start recording a deferred baseline (``defer_baseline``) now, in the background;
        nothing when it is recorded or being recorded. :meth:`baseline_recorded` starts it
        too; a run starts it once its first model request is on its way."""
        settle, self._settle = self._settle, None
        if settle is not None and not self._closed:
            self._settling = asyncio.ensure_future(settle())
            self._settling.add_done_callback(_retrieve)

    async def baseline_recorded(self) -> None:
        """Wait until the baseline is recorded. A view is returned by :meth:`create` as soon
        as it is mounted and records its baseline (the user's files as they are then) in the
        background when asked to (``defer_baseline``), from the user's tree itself.
        :meth:`changes` and everything that needs the baseline wait for it; a failure to
        record it raises here (ReviewError)."""
        self._check_open()
        self.start_baseline()
        task = self._settling
        if task is None:
            return
        try:
            await asyncio.shield(task)
        except OSError as exc:
            raise ReviewError(
                f"cannot record the baseline of {self._lay.workspace}: {exc}",
                workspace=str(self._lay.workspace),
            ) from exc

    async def changes(self) -> list[FileChange]:
        """Every file the copy differs in from the baseline, sorted by path."""
        self._check_open()
        await self.baseline_recorded()
        async with self._lock:
            self._last = await compute_changes(self._lay)
            return list(self._last)

    async def adopt_buffer(self, path: str, text: str) -> bool:
        """Take an editor buffer for ``path`` (workspace-relative) while the agent works: the
        copy gets ``text`` and it becomes the file's baseline, as an overlay given at creation
        (a proposal's "before" is the buffer; applying checks the disk against the disk at
        start). Whether the copy changed: False when the agent already changed the file (its
        version wins), the file is not a regular file of the baseline, may not be written,
        or already holds ``text``."""
        self._check_open()
        await self.baseline_recorded()
        async with self._lock:
            return await adopt_buffer(self._lay, path, text)

    def _select(self, paths: Iterable[str] | None) -> list[FileChange]:
        """The changes ``paths`` name (either side of a rename names it); every change last
        returned by :meth:`changes` when None. An unknown path raises UnknownPathError."""
        if paths is None:
            return list(self._last)
        wanted = [check_relpath(p) for p in paths]
        by_path: dict[str, FileChange] = {}
        for ch in self._last:
            for p in ch.paths:
                by_path[p] = ch
        unknown = [p for p in wanted if p not in by_path]
        if unknown:
            raise UnknownPathError(
                f"not among the proposed changes: {', '.join(unknown)}", paths=unknown
            )
        seen: dict[str, FileChange] = {}
        for p in wanted:
            seen[by_path[p].path] = by_path[p]
        return list(seen.values())

    def _not_applied(self) -> list[FileChange]:
        """The changes not written yet (a file the agent changed again after it was applied
        is due again)."""
        return [
            c
            for c in self._last
            if c.path not in self._applied or self._applied[c.path] != c.after_sha
        ]

    # -- review actions -----------------------------------------------------------------------

    async def apply(self, paths: Iterable[str] | None = None) -> ApplyResult:
        """Write changes into the user's workspace, each file atomically.

        ``paths=None`` applies every change not applied yet. When any selected
        file was changed by the user since the baseline, raises :class:`ConflictError` listing
        each conflict and writes nothing.
        """
        self._check_open()
        await self.changes()
        selected = self._not_applied() if paths is None else self._select(paths)

        async def write() -> list[str]:
            written = await asyncio.to_thread(
                apply_changes,
                self._lay.workspace,
                self._lay.path,
                selected,
                self._lay.disk_baseline,
            )
            for ch in selected:
                self._applied[ch.path] = ch.after_sha
            return written

        # A cancellation waits for the writes and their record: files written behind the
        # caller's back but not marked applied would be offered (and conflict) again.
        try:
            written = await finish_then_reraise(write())
        except OSError as exc:
            raise ReviewError(
                f"could not write to the workspace: {exc}", path=exc.filename
            ) from exc
        return ApplyResult(applied=written)

    async def commit(self, message: str, paths: Iterable[str] | None = None) -> ApplyResult:
        """Apply, then ``git add`` and ``git commit`` exactly those paths in the user's repo.

        Other staged changes of the user stay staged and out of the commit. Raises
        :class:`NotARepositoryError` (nothing written) when the workspace is not a repository,
        and :class:`HookChangeError` (nothing written) when a selected change touches a git
        hook or git configuration; otherwise the user's own, unchanged hooks run.
        """
        self._check_open()
        if not message.strip():
            raise ReviewError("a commit needs a message")
        ws = self._lay.workspace
        code, _, _ = await run_git(["rev-parse", "--show-toplevel"], cwd=ws, check=False)
        if code != 0:
            raise NotARepositoryError(
                f"cannot commit: {ws} is not a git repository", workspace=str(ws)
            )
        # Resolve the selection before writing so the commit covers renames' old paths too.
        await self.changes()
        if paths is None:
            chosen = [c.path for c in self._not_applied()]
        else:
            chosen = [c.path for c in self._select(paths)]
        if not chosen:
            raise ReviewError("nothing to commit: no change is selected")
        touched = sorted({p for c in self._select(chosen) for p in c.paths})
        # Git runs hooks and reads config as the user: never ones this proposal changed.
        await refuse_hook_changes(ws, self._select(chosen))
        result = await self.apply(chosen)
        # A deleted file git never knew about (an untracked one) has nothing to commit.
        _, tracked_out, _ = await run_git(["ls-files", "-z", "--", *touched], cwd=ws)
        tracked = set(split_z(tracked_out))
        exists = await asyncio.to_thread(lambda: {p for p in touched if (ws / p).exists()})
        paths_to_commit = [p for p in touched if p in tracked or p in exists]
        if not paths_to_commit:
            return ApplyResult(applied=result.applied)
        try:
            await run_git(["add", "-A", "--", *paths_to_commit], cwd=ws)
            await run_git(
                ["commit", "-q", "--only", "-m", message, "--", *paths_to_commit],
                cwd=ws,
                hooks="user",
            )
        except GitError as exc:  # a hook said no: the files stay written, uncommitted
            raise ReviewError(
                f"written to the workspace but not committed: {exc}", written=result.applied
            ) from exc
        _, sha, _ = await run_git(["rev-parse", "HEAD"], cwd=ws)
        return ApplyResult(applied=result.applied, commit=sha.decode().strip())

    async def discard(self) -> None:
        """Drop the copy without touching the workspace. Removes a kept copy too (for good)."""
        self._kept = False
        await self.aclose()

    # -- surviving a restart ------------------------------------------------------------------

    @property
    def kept(self) -> bool:
        """Whether :meth:`keep` marked the copy to outlive this process."""
        return self._kept

    async def keep(self, manifest: Mapping[str, Any]) -> None:
        """Keep the copy on disk past this process, with the caller's JSON ``manifest``: from
        now on :meth:`aclose` only lets go of this object (a view is unmounted); the copy, its
        worktree entry and its registration stay until :meth:`discard`, or until garbage
        collection finds it older than ``driveros.state.KEPT_MAX_AGE_S`` with no live process
        owning it. :meth:`reopen_kept` takes it back. Calling it again replaces the manifest."""
        self._check_open()
        await self.baseline_recorded()
        await keep_layout(self._lay, manifest)
        self._kept = True

    @classmethod
    async def reopen_kept(
        cls, *, workspace: Path | None = None, wanted: Wanted | None = None
    ) -> list[KeptScratch[Self]]:
        """The kept scratch copies (of ``workspace`` when given; whose manifest ``wanted``
        accepts, when given) in the state directory, oldest first, each reopened and now owned
        by this process. Copies whose files are gone are dropped (and their registration
        removed)."""
        found: list[KeptScratch[Self]] = []
        for layout, kept in await reopen_layouts(workspace, wanted):
            scratch = cls(layout)
            scratch._kept = True
            await scratch.changes()
            found.append(
                KeptScratch(scratch=scratch, manifest=dict(kept.manifest), kept_at=kept.at)
            )
        return found

    # -- lifetime ---------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Remove the copy and its worktree registration (a kept copy stays: see
        :meth:`keep`). Safe to call twice; finishes its cleanup even when the calling task is
        being canceled (and then re-raises)."""
        self._closed = True
        self._settle = None  # never started: nothing to wait for
        task, self._settling = self._settling, None
        if task is not None:
            task.cancel()

        async def after_settling(work: Coroutine[Any, Any, None]) -> None:
            if task is not None:
                await asyncio.wait([task])  # nothing is removed while it still writes there
            await work

        if self._kept and not self._removed:
            # A kept view outlives this process on disk (its upper layer), not as a mount:
            # nothing stays mounted once the editor or CLI that owned it is gone, and
            # :meth:`reopen_kept` mounts it again.
            await finish_then_reraise(after_settling(let_go_kept(self._lay)))
            return
        if self._removed:
            return
        self._removed = True
        await finish_then_reraise(after_settling(destroy(self._lay)))

    def _check_open(self) -> None:
        if self._closed:
            raise ScratchClosedError("the scratch workspace is closed")

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<ScratchWorkspace {self._lay.workspace} -> {self._lay.path} ({state})>"
