"""Building a scratch copy and its baseline snapshot.

Both kinds of copy keep their bookkeeping in a private bare git repository outside the copy
(``<root>/state/git``): its index holds the baseline, so finding what the agent changed is one
``git add -A`` plus one ``git diff-index``, and the user's own repository, index and object
store are never written (for a worktree the private repository borrows the user's objects
through ``objects/info/alternates``, and starts from the worktree's index so only files that
differ from HEAD are hashed).
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from driveros._finish import finish_then_reraise, thread_to_the_end
from driveros._git import run_git, split_z, yielding_cpu
from driveros._tmp import temp_root
from driveros.review._environments import (
    ENVIRONMENT_DIRS,
    exclude_lines,
    is_environment,
    link_environments,
)
from driveros.review._errors import ReviewError
from driveros.review._files import (
    COPY_WORKERS,
    check_relpath,
    chunks,
    current_shas,
    sync_paths,
    write_overlays,
)
from driveros.review._hiding import (
    drop_hide_layer,
    hide_layer_path,
)
from driveros.review._layout import Layout
from driveros.review._overlay import (
    AUTO_PREFERS,
    VIEW_STRATEGIES,
    overlay_refusal,
    view_driver,
)
from driveros.review._private import (
    dirty_paths,
    init_private,
    too_big,
    user_excludes,
    user_status,
)
from driveros.review._snapshot_view import (
    overlay_baseline,
    populate_overlay,
    populate_overlay_plain,
)
from driveros.review._stage import add_paths, stage
from driveros.review._user_repo import (
    EXCLUDES_TEXT,
    Listings,
    Repo,
    repo_info,
)
from driveros.state import (
    Lease,
    drop_worktree_entries,
    new_lease_id,
    remove_paths,
    repo_lock,
    unmount_under,
)

log = logging.getLogger(__name__)


async def _copy_parallel(src: Path, dst: Path, relpaths: list[str]) -> None:
    async with asyncio.TaskGroup() as tg:
        for part in chunks(relpaths, COPY_WORKERS):
            tg.create_task(thread_to_the_end(sync_paths, src, dst, part))


async def _populate_worktree(lay: Layout, top: Path, common: Path, max_file_size: int) -> None:
    status_task = asyncio.create_task(user_status(top))
    try:
        await _add_worktree(lay, top, common)
        # The checkout, outside the lock: as a process of its own, a cancellation kills it
        # (one that `worktree add` started would outlive a killed add, writing on).
        await run_git(["reset", "--hard", "-q", "--no-recurse-submodules"], cwd=lay.work)
    except BaseException:
        status_task.cancel()
        await asyncio.gather(status_task, return_exceptions=True)
        raise
    _, status, _ = await status_task
    dirty = await dirty_paths(lay, top, status, max_file_size)
    _, index_out, _ = await run_git(["rev-parse", "--git-path", "index"], cwd=lay.work)
    index = Path(index_out.decode("utf-8", "surrogateescape").strip())
    if not index.is_absolute():
        index = lay.work / index
    lay.worktree_git = await thread_to_the_end(index.parent.resolve)

    await init_private(
        lay.git_dir,
        excludes=await thread_to_the_end(user_excludes, common),
        alternates=common / "objects",
    )
    # Starting from the worktree's index keeps git's stat cache: only dirty files get hashed.
    await thread_to_the_end(_copy_index, index, lay.git_dir)
    await _copy_parallel(top, lay.work, dirty)


async def _add_worktree(lay: Layout, top: Path, common: Path) -> None:
    """Register ``lay.work`` as a detached worktree of HEAD, not checked out yet."""
    # Two `worktree add` on one repository at once race for the same entry name under
    # .git/worktrees: one lock per repository, shared with other processes. (No hooks, as
    # for every run_git call: a post-checkout hook of the user's never runs on our copy.)
    async with repo_lock(common):
        try:
            await run_git(
                ["worktree", "add", "--detach", "--no-checkout", "-q", str(lay.work), "HEAD"],
                cwd=top,
            )
        except BaseException:
            # Killed half-way (a cancellation), its entry may be half-written: one that makes
            # the next `worktree add` on the repository fail. Gone before that add starts.
            await finish_then_reraise(drop_worktree_entries(common, [lay.root], {lay.work.name}))
            raise


def _copy_index(index: Path, git_dir: Path) -> None:
    """The user's index into the private repository, with the shared indexes a split index
    (``core.splitIndex``) names: git reads them beside the index. Blocking."""
    shutil.copyfile(index, git_dir / "index")
    for shared in index.parent.glob("sharedindex.*"):
        if shared.is_file() and not shared.is_symlink():
            shutil.copyfile(shared, git_dir / shared.name)


async def _hash_all(lay: Layout, tree: Path, max_file_size: int) -> None:
    """A private repository whose index holds every file of ``tree`` that ``copy`` takes
    (``.gitignore`` and the default excludes honoured, big files left out)."""
    await init_private(lay.git_dir, excludes=EXCLUDES_TEXT, alternates=None)
    await _exclude_big(lay, tree, max_file_size)
    await stage(lay, tree, None)
    if lay.left_out:
        # Only the initial add needs them: a file the agent creates at such a path is a
        # change like any other (and applying it meets the user's file: a conflict).
        exclude = lay.git_dir / "info" / "exclude"
        await thread_to_the_end(exclude.write_text, EXCLUDES_TEXT, "utf-8")


async def _exclude_big(lay: Layout, tree: Path, max_file_size: int) -> None:
    """Set ``left_out`` to the files over the limit that ``add -A`` of ``tree`` would take,
    and exclude them in the private repository (for that first ``add`` only)."""
    if not max_file_size:
        return
    _, out, _ = await run_git(
        ["ls-files", "-o", "--exclude-standard", "-z"],
        cwd=tree,
        repo=lay.private_repo_at(tree),
    )
    big = await thread_to_the_end(too_big, tree, split_z(out), max_file_size)
    lay.left_out = [p for p in big if "\n" not in p]  # a name git's excludes can say
    if lay.left_out:
        lines = "".join(f"{exclude_pattern(p)}\n" for p in lay.left_out)
        await thread_to_the_end(_append, lay.git_dir / "info" / "exclude", lines)


async def _populate_copy(lay: Layout, max_file_size: int) -> None:
    # Hash the user's files straight into the private repository (honouring .gitignore and
    # the default excludes), then check them out into the copy: both steps run inside git,
    # and the copy is by construction exactly the baseline.
    await thread_to_the_end(lay.work.mkdir)
    await _hash_all(lay, lay.workspace, max_file_size)
    # -u records the copy's stat data in the index, so later `add -A` only hashes edits.
    await run_git(
        ["checkout-index", "--all", "--force", "--index"],
        cwd=lay.work,
        repo=lay.private_repo,
    )


def _append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


def exclude_pattern(rel: str) -> str:
    """A gitignore line matching exactly the file ``rel`` (anchored, wildcards escaped)."""
    escaped = re.sub(r"([\\*?\[])", r"\\\1", rel)
    stripped = escaped.rstrip(" ")
    return "/" + stripped + "\\ " * (len(escaped) - len(stripped))


async def _link_environments(lay: Layout) -> None:
    def link() -> None:
        lay.environments = link_environments(lay.workspace, lay.path)
        _exclude_found(lay)

    await thread_to_the_end(link)


async def _exclude_environments(lay: Layout) -> None:
    found = [n for n in ENVIRONMENT_DIRS if is_environment(lay.workspace / n, n)]
    if found:
        # A tracked one is source (vendored), as a worktree would check it out.
        _, out, _ = await run_git(
            ["ls-files", "-z", "--cached", "--", *(f"{lay.prefix}{n}" for n in found)],
            cwd=lay.work,
            repo=lay.private_repo,
        )
        tracked = {p[len(lay.prefix) :].split("/", 1)[0] for p in split_z(out)}
        found = [n for n in found if n not in tracked]

    lay.environments = found
    await thread_to_the_end(_exclude_found, lay)


def _exclude_found(lay: Layout) -> None:
    """Exclude ``lay.environments`` in the private repository (never reported as changes)."""
    if lay.environments:
        _append(lay.git_dir / "info" / "exclude", exclude_lines(lay.prefix, lay.environments))


#: Docker runtimes known to work on a bind-mounted overlay view. gVisor (``runsc``) fails
#: to stat it (EINVAL for every path), so its runs get a worktree or copy.
VIEW_RUNTIMES = frozenset({"runc"})


def _container_refusal(workspace: Path, runtime: str) -> str | None:
    """Why a view cannot serve a docker container with ``runtime``, or None.

    Besides the runtime: the docker tier runs commands as the workspace's owner, and as an
    unprivileged uid when the owner is root, opening a copy up to that uid with a chmod of
    every file. On a view that chmod would copy every file up, so a root-owned workspace gets
    a worktree or copy instead.
    """
    if view_driver()[0] == "fuse-overlay":
        # dockerd (root) cannot enter a FUSE mount made without allow_other.
        return "a fuse-overlayfs view is not visible to the docker daemon"
    if runtime not in VIEW_RUNTIMES:
        return f"the docker runtime {runtime!r} cannot use an overlay view (it cannot stat one)"
    try:
        owner = workspace.stat().st_uid
    except OSError as exc:
        return f"cannot read {workspace}: {exc.strerror}"
    if owner == 0:
        return (
            "the workspace is owned by root: the docker tier's unprivileged user could not"
            " write a view of it"
        )
    return None


def _root_for(base_dir: Path | None, lease_id: str) -> Path:
    # The configured temporary directory or an error: never tempfile's silent fall back.
    base = Path(base_dir) if base_dir is not None else temp_root()
    return base.resolve() / f"driveros-scratch-{lease_id}"


async def build(
    workspace: Path,
    *,
    overlays: Mapping[str, str],
    base_dir: Path | None,
    max_file_size: int = 0,
    strategy: str = "auto",
    container: str | None = None,
    hide_git: bool = False,
) -> tuple[Layout, Callable[[], Awaitable[None]] | None]:
    """Create the copy, overlay the buffers and record the baseline. Cleans up on failure.

    A view of a repository is returned once it is mounted, with the rest to run (the second
    item, else None): it records the baseline from the user's tree, never from the view (see
    :func:`overlay_baseline`); the caller runs it, and cleans up when it fails.

    ``strategy``: ``auto`` (:data:`AUTO_PREFERS`: the overlay when possible, else the
    fallback), ``overlay`` (the same, asked for explicitly), ``worktree`` (a git worktree in
    a repository, else a copy) or ``copy``. ``container``: the docker runtime that will mount
    the view (see :func:`_container_refusal`); ``hide_git``: the view hides the repository's
    ``.git`` (a whiteout: the container neither reads its config nor writes it).
    """
    clean_overlays = {check_relpath(k): v for k, v in overlays.items()}
    repo = await repo_info(workspace)
    lease_id = new_lease_id()
    want_overlay = strategy == "overlay" or (strategy == "auto" and AUTO_PREFERS[0] == "overlay")

    def plan() -> tuple[Path, str, Path | None]:
        # The scratch root, why not a view ("" when one is made, or not wanted) and, for a
        # view, the hide layer's place on a tmpfs (registered with the copy before it is made).
        root = _root_for(base_dir, lease_id)
        if not want_overlay:
            return root, "", None
        lower = repo.top if repo else workspace
        refusal = overlay_refusal(lower, root, repository=repo is not None)
        if refusal is None and container is not None:
            refusal = _container_refusal(workspace, container)
        return root, refusal or "", None if refusal else hide_layer_path(lease_id)

    root, fallback, hide_layer = await thread_to_the_end(plan)
    use_overlay = want_overlay and not fallback
    # A git directory an untrusted container must not read (credentials in .git/config).
    hide = [".git"] if use_overlay and repo is not None and hide_git else []
    if strategy == "copy":
        repo = None
    # A view of a repository: its listings run while the scratch directory is made.
    listings = Listings(repo) if use_overlay and repo is not None else None
    try:
        return await _make(
            _Plan(
                workspace=workspace,
                repo=repo,
                listings=listings,
                root=root,
                lease_id=lease_id,
                use_overlay=use_overlay,
                fallback=fallback,
                hide=hide,
                hide_layer=hide_layer,
                clean_overlays=clean_overlays,
                base_dir=base_dir,
                max_file_size=max_file_size,
            )
        )
    finally:
        if listings is not None:
            await listings.close()


@dataclass(frozen=True)
class _Plan:
    """How :func:`build` decided to make one copy (what :func:`_make` makes)."""

    workspace: Path
    repo: Repo | None
    listings: Listings | None
    root: Path
    lease_id: str
    use_overlay: bool
    #: Why no view (empty when one is made, or none was wanted).
    fallback: str
    hide: list[str]
    hide_layer: Path | None
    clean_overlays: dict[str, str]
    base_dir: Path | None
    max_file_size: int


async def _make(plan: _Plan) -> tuple[Layout, Callable[[], Awaitable[None]] | None]:
    """:func:`build` once the strategy is known (``use_overlay``: a view, of a repository
    with ``listings``)."""
    workspace, repo, listings = plan.workspace, plan.repo, plan.listings
    root, lease_id, hide, hide_layer = plan.root, plan.lease_id, plan.hide, plan.hide_layer
    use_overlay, fallback, clean_overlays = plan.use_overlay, plan.fallback, plan.clean_overlays
    base_dir, max_file_size = plan.base_dir, plan.max_file_size
    lease: Lease | None = None
    try:
        # Registered before it exists: whatever happens next, a later start can clean it.
        lease = await Lease.create(
            "scratch",
            paths=[root, *([hide_layer] if hide_layer is not None else [])],
            repo=repo.top if repo else None,
            lock_key=repo.common if repo else None,
            detail={"workspace": str(workspace)},
            lease_id=lease_id,
        )
    except OSError as exc:
        # Still usable, only not collectable after a crash: say so and go on.
        log.warning("driveros: cannot register the scratch copy (%s); a crash would leak it", exc)
    name = (repo.top if repo else workspace).name or "workspace"
    lay = Layout(
        workspace=workspace,
        root=root,
        work=root / name,
        prefix=repo.prefix if repo else "",
        git_dir=root / "state" / "git",
        repo_top=repo.top if repo and not use_overlay else None,
        git_common=repo.common if repo and not use_overlay else None,
        lease=lease,
        fallback_reason=fallback,
        hide_layer=hide_layer,
    )
    try:
        # Inside the cleanup: a cancellation that lands right after the mkdir still removes it.
        try:
            await thread_to_the_end(root.mkdir, 0o700)
        except OSError as exc:
            raise ReviewError(
                f"cannot create a scratch directory in {root.parent}: {exc}",
                base_dir=str(base_dir),
            ) from exc
        await thread_to_the_end(lay.git_dir.parent.mkdir)
        untracked: list[str] = []  # a view: the files its baseline takes, besides a HEAD
        if use_overlay:
            lay.strategy, lay.lower = view_driver()[0], repo.top if repo else workspace
            if repo is not None:
                assert listings is not None
                why, untracked = await populate_overlay(
                    lay, repo.top, listings, max_file_size, hide
                )
            else:
                why, untracked = await populate_overlay_plain(lay, max_file_size, hide)
            if why is not None:
                # The probe said yes but the kernel said no: fall back, say why.
                log.info("driveros: overlay scratch view not possible (%s); copying", why)
                lay.strategy, lay.lower, lay.fallback_reason = "", None, why
                lay.left_out = []
                await unmount_under(lay.root)
                await drop_hide_layer(lay)
                lay.hidden = []
                if repo is not None:
                    lay.repo_top, lay.git_common = repo.top, repo.common
                    if lease is not None:
                        await lease.update(repo=str(repo.top), lock_key=str(repo.common))
                for d in (lay.work, lay.upper, lay.overlay_work, lay.git_dir):
                    await thread_to_the_end(shutil.rmtree, d, True)
        if lay.strategy in VIEW_STRATEGIES:
            pass
        elif repo is not None:
            lay.strategy = "worktree"
            await _populate_worktree(lay, repo.top, repo.common, max_file_size)
        else:
            lay.strategy = "copy"
            await _populate_copy(lay, max_file_size)
        # An overlaid path is written from the editor's buffer whatever its size on disk.
        lay.left_out = [p for p in lay.left_out if p[len(lay.prefix) :] not in clean_overlays]
        if clean_overlays:
            lay.disk_baseline = await thread_to_the_end(current_shas, workspace, clean_overlays)
            await thread_to_the_end(write_overlays, lay.path, clean_overlays)
        if lay.strategy in VIEW_STRATEGIES:

            async def settle() -> None:
                with yielding_cpu():  # the run's first request goes out meanwhile
                    if repo is not None:
                        await overlay_baseline(lay, repo.top, repo.common, repo.head, untracked)
                    else:  # a plain directory: its files, read from it (not the view)
                        await stage(lay, lay.workspace, untracked)
                    await _record_baseline(lay, clean_overlays)

            return lay, settle
        await _record_baseline(lay, clean_overlays)
        return lay, None
    except BaseException as exc:
        await finish_then_reraise(destroy(lay))
        if isinstance(exc, OSError):
            raise ReviewError(
                f"cannot create the scratch copy of {workspace}: {exc}", workspace=str(workspace)
            ) from exc
        raise


async def _record_baseline(lay: Layout, overlays: Mapping[str, str]) -> None:
    """Finish the private index (a view: the environments excluded and the buffers added; a
    worktree or copy: its files staged) and record its tree as the baseline."""
    if lay.strategy in VIEW_STRATEGIES:
        # The environments are seen through the lower layer (read-only), never linked.
        await _exclude_environments(lay)
        await add_paths(lay, [f"{lay.prefix}{p}" for p in overlays])
    else:
        await _link_environments(lay)
        await stage(lay, lay.work, None)
    _, tree, _ = await run_git(
        ["write-tree"],
        cwd=lay.work,
        repo=lay.private_repo,
    )
    lay.baseline = tree.decode().strip()


async def destroy(lay: Layout) -> None:
    """Remove a scratch copy completely: every file, the worktree entry, the registration.

    Also undoes a ``git worktree add`` that was killed half-way (see
    :func:`driveros.state.Lease.release`).
    """
    if lay.lease is not None:
        await lay.lease.release()
        return
    extra = [str(lay.hide_layer)] if lay.hide_layer and lay.hide_layer.parent != lay.root else []
    await remove_paths(
        [str(lay.root), *extra],
        repo_top=str(lay.repo_top) if lay.repo_top else None,
        lock_key=str(lay.git_common) if lay.git_common else None,
    )
