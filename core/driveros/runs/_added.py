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
    from driveros.review import FolderViews

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


async def folder_git_binds(
    folders: FolderViews, *, taken: Mapping[str, str] | None = None
) -> dict[Path, dict[str, str]]:
    """What lets ``git`` work in each writable added folder whose review copy is a worktree,
    by folder: read-only binds (host path -> sandbox path) of the user's git directory at
    ``FOLDER_GIT_AT/<n>`` (or where ``taken`` already binds it: the workspace's, in docker)
    and of a ``.git`` link naming its worktree there, over the copy's own ``.git`` (which
    names the git directory by its host path, inside the folder, where commands see the copy
    instead). Not for a view (its ``.git`` is the repository's own), a copy, or a folder
    inside its repository. The links are written beside each copy, in its private scratch
    directory, and go with it. The git directory may hold credentials: never for an
    untrusted run (docs/sandbox.md)."""
    at_of = dict(taken or {})
    plans: dict[Path, tuple[Path, str, dict[str, str]]] = {}
    for folder, view in folders.views.items():
        common = view.git_dir
        if common is None:
            continue
        git_at = at_of.setdefault(str(common), f"{FOLDER_GIT_AT}/{len(at_of)}")
        found = view.container_git(git_at=git_at, work_tree=str(folder))
        if found is not None:
            link = view.path.with_name(f"{view.path.name}.sandbox-git")
            plans[folder] = (link, f"gitdir: {found.env['GIT_DIR']}\n", found.mounts)

    def write(link: Path, text: str) -> bool:
        try:
            link.write_text(text)
            link.chmod(0o644)  # the container's uid reads it
        except OSError as exc:
            log.warning("driveros: no git in the copy of an added folder: %s", exc)
            return False
        return True

    written = {f: plan for f, plan in plans.items() if await asyncio.to_thread(write, *plan[:2])}
    return {
        folder: {**mounts, str(link): f"{folder}/.git"}
        for folder, (link, _, mounts) in written.items()
    }
