"""A folder a run reaches besides its workspace (``driveros agent --add-dir DIR[:rw]``).

Light on purpose (pydantic only): :class:`~driveros.runs.RunSpec` holds these, and the
language server imports it at start.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, model_validator

if TYPE_CHECKING:
    from driveros.review import FolderViews, ScratchWorkspace

log = logging.getLogger(__name__)

#: Entries :func:`secret_files` looks at in a folder before giving up on checking it.
MAX_ENTRIES = 200_000
#: Where commands see the git directory of an added folder's worktree copy (``/<n>`` each).
FOLDER_GIT_AT = "/driveros/folder-git"
_SKIP = frozenset({".git", "node_modules", "__pycache__"})


class AddedDir(BaseModel):
    """One added folder of a run (``RunSpec.add_dirs``): docs/cli.md, "More than one folder".

    ``path`` is the folder's resolved real path: the file tools and commands name its files by
    it (``/home/me/lib/util.py``), and a proposal lists them so. Read-only (the default) it is
    mounted read-only in the local sandbox and the file tools refuse to change it; ``writable``
    it is mounted writable at that path and, in a review run, works on a scratch view of its own
    that is reviewed with the workspace's. Never configuration, whatever its trust: none of its
    files (``.env``, ``.driveros*``, AGENTS.md, hooks) is read as settings or instructions.

    A bare path (``Path`` or ``str``) validates as a read-only folder.
    """

    model_config = ConfigDict(frozen=True)

    path: Path
    writable: bool = False

    @model_validator(mode="before")
    @classmethod
    def _bare_path(cls, value: Any) -> Any:
        if isinstance(value, (str, Path)):
            return {"path": value}
        return value


def folders_prompt(added: list[AddedDir]) -> str:
    """What the model is told of the run's added folders (empty without any)."""
    if not added:
        return ""
    lines = [
        "Besides the workspace, this run has these folders. Name their files by absolute "
        "path (the folder's path, then the file's) in the file tools and in commands:"
    ]
    for folder in added:
        kind = "writable" if folder.writable else "read-only"
        lines.append(f"- {folder.path} ({kind})")
    return "\n".join(lines)


def secret_files(root: Path, *, limit: int = MAX_ENTRIES) -> list[str] | None:
    """The secret files and folders under ``root`` (docs/sandbox.md, "Secret files"), relative
    and sorted; None when it has more than ``limit`` entries (not checked). A folder holding
    one is never added to a run (``--add-dir``, the language server's ``folders``): its values
    are not in the run's redactor, so what a command prints of them would reach the model.
    Blocking (walks the folder)."""
    from driveros.sandbox import secret_path_reason

    found: list[str] = []
    seen = 0
    for top, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP]
        for name in [*names, *dirs]:
            seen += 1
            rel = (Path(top) / name).relative_to(root).as_posix()
            if secret_path_reason(rel) is not None:
                found.append(rel)
        if seen > limit:
            return None
    return sorted(found)


async def git_link(
    copy: ScratchWorkspace, *, git_at: str, work_tree: str
) -> tuple[Path, dict[str, str]] | None:
    """A ``.git`` link for commands that see the worktree ``copy`` at ``work_tree`` and its
    repository's git directory at ``git_at``: the link (to bind read-only over the copy's own
    ``.git``, which names the git directory by its host path) and the mounts (host path ->
    sandbox path) of that directory. None for a view, a copy, a folder inside its
    repository, or when the link cannot be written. It is written beside the copy, in its
    private scratch directory, and goes with it."""
    found = copy.container_git(git_at=git_at, work_tree=work_tree)
    if found is None:
        return None
    link = copy.path.with_name(f"{copy.path.name}.sandbox-git")

    def write() -> None:
        link.write_text(f"gitdir: {found.env['GIT_DIR']}\n")
        link.chmod(0o644)  # the container's uid reads it

    try:
        await asyncio.to_thread(write)
    except OSError as exc:
        log.warning("driveros: no git in the scratch copy of %s: %s", copy.workspace, exc)
        return None
    return link, found.mounts


async def folder_git_binds(
    folders: FolderViews, *, taken: Mapping[str, str] | None = None
) -> dict[Path, dict[str, str]]:
    """What lets ``git`` work in each writable added folder whose review copy is a worktree,
    by folder: read-only binds (host path -> sandbox path) of the user's git directory at
    ``FOLDER_GIT_AT/<n>`` (or where ``taken`` already binds it: the workspace's, in docker)
    and of its :func:`git_link` over the copy's ``.git`` (where commands see the copy, the
    folder's path, its own ``.git`` names a file). The git directory may hold credentials:
    never for an untrusted run (docs/sandbox.md)."""
    at_of = dict(taken or {})
    binds: dict[Path, dict[str, str]] = {}
    for folder, view in folders.views.items():
        common = view.git_dir
        if common is None:
            continue
        git_at = at_of.setdefault(str(common), f"{FOLDER_GIT_AT}/{len(at_of)}")
        made = await git_link(view, git_at=git_at, work_tree=str(folder))
        if made is not None:
            link, mounts = made
            binds[folder] = {**mounts, str(link): f"{folder}/.git"}
    return binds
