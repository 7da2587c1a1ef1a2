"""A folder a run reaches besides its workspace (``driveros agent --add-dir DIR[:rw]``).

Light on purpose (pydantic only): :class:`~driveros.runs.RunSpec` holds these, and the
language server imports it at start.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

#: Entries :func:`secret_files` looks at in a folder before giving up on checking it.
MAX_ENTRIES = 200_000
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
