"""What a copy-on-write view hides and how it is mounted: the ignored paths of the user's tree,
the hide layer holding a whiteout for each (on a tmpfs when one is usable), and the mount."""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path

from driveros._finish import thread_to_the_end
from driveros._git import GitRepo, GitResult, run_git, split_z
from driveros.review._environments import ENVIRONMENT_DIRS, is_environment
from driveros.review._layout import Layout
from driveros.review._overlay import hide_layer_base, hide_paths, mount_overlay, to_hide
from driveros.sandbox import secret_path_reason
from driveros.state import remove_paths

log = logging.getLogger(__name__)


def environment_paths(lay: Layout) -> list[str]:
    """The environments of the workspace a view keeps visible (relative to ``work``)."""
    return [f"{lay.prefix}{n}" for n in ENVIRONMENT_DIRS if is_environment(lay.workspace / n, n)]


async def untracked_environments(
    lay: Layout, top: Path, ignored: list[str], *, config: GitResult | None = None
) -> list[str]:
    """The environments of a view of the repository at ``top`` that hold no tracked file
    (ignored or untracked, as the worktree linker links only those): the ones a view keeps
    visible (relative to ``top``). A tracked ``env/`` with a tracked ``pyvenv.cfg`` is source:
    the user's ignored files under it are hidden like any other. ``ignored``: see
    :func:`user_ignored`; git is asked only about an environment that is not itself ignored
    and has ignored paths under it (else keeping it or not hides the same)."""
    found = await thread_to_the_end(environment_paths, lay)
    listed = {p.rstrip("/") for p in ignored}
    unsure = [e for e in found if e not in listed and any(p.startswith(e + "/") for p in listed)]
    if not unsure:
        return found
    _, out, _ = await run_git(
        ["ls-files", "-z", "--cached", "--", *unsure], cwd=top, repo=GitRepo(config=config)
    )
    tracked = split_z(out)
    return [e for e in found if not any(p.startswith(e + "/") for p in tracked)]


def hidden_of(
    lay: Layout,
    lower: Path,
    ignored: list[str],
    untracked: Sequence[str] = (),
    *,
    keep: Sequence[str] | None = None,
) -> list[str]:
    """What a view of ``lower`` hides: every ``ignored`` path (as ``git status
    --ignored=matching`` names them) but the environments of ``keep`` (a worktree or copy
    never holds them either; see :func:`untracked_environments`; None: every environment, as
    in a plain directory, where nothing is tracked), and the deny-listed secret files among
    ``untracked`` (``.env``, keys; see :func:`driveros.sandbox.secret_path_reason`; a plain
    directory's untracked files)."""
    found = [*ignored, *(p for p in untracked if secret_path_reason(p))]
    kept = environment_paths(lay) if keep is None else list(keep)
    return to_hide(lower, found, kept, reach=[lay.prefix])


def matching_ignored(listed: list[str]) -> list[str]:
    """The ignored paths ``git status --ignored=matching --untracked-files=all`` names (its
    ``!!`` entries), from ``git ls-files -o -i --exclude-standard --directory`` (which, unlike
    the status, refreshes nothing: it does not ``stat`` every tracked file). Both name a
    directory an ignore pattern matches once, and an ignored file inside a directory that
    holds a tracked file by itself; the listing also names each untracked directory holding
    only ignored paths *and* those paths, where the status names only the paths: such a
    directory, the parent of another entry, is dropped."""
    parents: set[str] = set()
    for path in listed:
        parts = path.rstrip("/").split("/")
        parents.update("/".join(parts[:i]) + "/" for i in range(1, len(parts)))
    return [p for p in listed if p and not (p.endswith("/") and p in parents)]


async def user_ignored(top: Path, *, config: GitResult | None = None) -> list[str]:
    """The ignored paths of the user's tree, as :func:`matching_ignored` says (``config``: see
    :func:`driveros._git.run_git`)."""
    _, out, _ = await run_git(
        ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"],
        cwd=top,
        repo=GitRepo(config=config),
    )
    return matching_ignored(split_z(out))


def plant_hidden(lay: Layout, lower: Path, hide: list[str]) -> list[str]:
    """Make the hide layer (``lay.hide_layer``, the tmpfs directory chosen for it, else or when
    that fails ``root / "hide"``) with a whiteout for each path of ``hide``; the paths hidden.
    Sets ``lay.hide_layer`` (None when there is nothing to hide). Blocking."""
    if not hide:
        lay.hide_layer = None
        return []
    fallback = lay.root / "hide"
    for layer in (lay.hide_layer, fallback):
        if layer is None:
            continue
        try:
            layer.mkdir(0o700)
        except OSError as exc:
            log.debug("driveros: no hide layer at %s (%s)", layer, exc)
            continue
        lay.hide_layer = layer
        try:
            return hide_paths(layer, hide, lower)
        except OSError as exc:  # a full tmpfs: the scratch root next
            if layer == fallback:
                raise
            log.debug("driveros: cannot fill the hide layer at %s (%s)", layer, exc)
            shutil.rmtree(layer, ignore_errors=True)
    raise OSError(f"cannot make the hide layer in {lay.root}")


async def drop_hide_layer(lay: Layout) -> None:
    """Remove the hide layer (after unmounting the view)."""
    layer, lay.hide_layer = lay.hide_layer, None
    if layer is None:
        return
    if layer.parent == lay.root:
        await thread_to_the_end(shutil.rmtree, layer, True)
    else:
        await remove_paths([str(layer)])


def hide_layer_path(lease_id: str) -> Path | None:
    """Where this copy's hide layer goes when a tmpfs is usable: a fresh, unguessable name
    (``driveros-hide-*``, made 0700 right before use), or None. Blocking."""
    base = hide_layer_base()
    return None if base is None else base / f"driveros-hide-{lease_id}-{secrets.token_hex(8)}"


async def mount_view(lay: Layout, lower: Path, hide: list[str]) -> str | None:
    """Make the view's directories and its hide layer (a whiteout for each path of ``hide``,
    paths of ``lower``), and mount the view of ``lower``; None, or why not. Sets
    ``lay.hidden``."""

    def dirs() -> None:
        for d in (lay.upper, lay.overlay_work, lay.work):
            d.mkdir(0o700)
        # The view's top directory is the upper layer's: give it the workspace's owner and
        # mode (a sandbox runs as that owner; a root-owned 0700 top would lock it out).
        st = lower.stat()
        os.chown(lay.upper, st.st_uid, st.st_gid)
        lay.upper.chmod(stat.S_IMODE(st.st_mode))
        lay.hidden = plant_hidden(lay, lower, hide)

    await thread_to_the_end(dirs)
    return await mount_overlay(
        lower, lay.upper, lay.overlay_work, lay.work, lay.strategy, lay.hide_layer
    )
