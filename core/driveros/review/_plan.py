"""The review planner: for each accepted change, the text to write or why it cannot be written.

One rule for every writer of the user's tree (the CLI's ``apply``/``commit`` and the language
server's ``WorkspaceEdit``):

- a path is written or removed only through real directories of the workspace: a parent
  that is a symbolic link (wherever it points), a file where a directory should be, a path
  that resolves outside the workspace, or a directory where the file should be is a conflict;
- a file's current content (the open buffer, else the disk) must be what the run started
  from; a language server may instead re-apply the agent's change on the new text
  (``rebase``), the CLI refuses.

Blocking (reads the file system): callers run it off the event loop.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from driveros.review._errors import ReviewError
from driveros.review._files import check_relpath, inside

Rebase = Callable[[str, str, str], str | None]
"""``rebase(base, theirs, ours)``: ``ours``' change re-applied on ``theirs``, or None."""

Current = Callable[[str], str | None]
"""The current text of a workspace-relative path (buffer or disk), None when absent."""


def _parents(rel: str) -> list[str]:
    parts = PurePosixPath(rel).parts
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def path_problem(workspace: Path, rel: str, *, remove: bool = False) -> str | None:
    """Why ``rel`` may not be written (or, with ``remove``, deleted) in ``workspace``; None if
    it may. Symbolic links are never followed: not as a parent, not as the file itself when
    writing text over it."""
    try:
        rel = check_relpath(rel)
    except ReviewError as exc:
        return str(exc)
    for parent in _parents(rel):
        here = workspace / parent
        if here.is_symlink():
            return f"{parent} is a symbolic link; driveros never writes through one"
        if os.path.lexists(here):
            if not here.is_dir():
                return f"{parent} is a file in the workspace, where the change needs a directory"
        else:
            break  # the rest is created
    if not inside(workspace, workspace / rel):
        return "the path leaves the workspace"
    target = workspace / rel
    if target.is_dir() and not target.is_symlink():
        return "now a directory in the workspace" if remove else "a directory is in the way"
    return None


@dataclass(frozen=True)
class PlannedFile:
    """What to do with one change: write ``target`` at ``path`` (after removing ``source``
    when it differs), delete ``path`` (``target`` None), or nothing (``conflict`` says why).

    ``current`` is the text the decision was made on (the base of the edit): a writer that
    cannot lock the file must check it is still there right before and after writing.
    """

    path: str
    action: str
    #: The path the content comes from (``old_path`` of a rename, else ``path``).
    source: str
    current: str | None
    target: str | None
    conflict: str | None = None


def _refused(change: Any, rel: str, source: str, why: str) -> PlannedFile:
    return PlannedFile(
        path=rel, action=str(change.action), source=source, current=None, target=None, conflict=why
    )


def plan_file(
    workspace: Path, change: Any, *, current: Current, rebase: Rebase | None = None
) -> PlannedFile:
    """Decide one change (a ``FileChange``-like object) against the workspace as it is now.

    ``current`` gives the text the user has now (their open buffer, else the file on disk);
    it is only asked about paths that passed :func:`path_problem`. ``rebase`` (optional)
    re-applies the change on a file that was edited since the run started.
    """
    rel = str(change.path)
    action = str(change.action)
    source = str(change.old_path) if action == "rename" and change.old_path else rel
    if change.binary:
        return _refused(change, rel, source, "binary files cannot be proposed as text edits")
    if action in ("create", "modify") and change.after is None:
        return _refused(change, rel, source, "the file is too large to propose as a text edit")
    if getattr(change, "mode", None) == "120000" or (workspace / rel).is_symlink():
        return _refused(change, rel, source, "symbolic links are reviewed with the CLI")
    problem = path_problem(workspace, rel, remove=action == "delete")
    if problem is None and source != rel:
        problem = path_problem(workspace, source, remove=True)
        if problem is None and (workspace / source).is_symlink():
            problem = "symbolic links are reviewed with the CLI"
    if problem is not None:
        return _refused(change, rel, source, problem)
    try:
        now = current(source)
        existing = current(rel) if source != rel else now
    except (OSError, UnicodeDecodeError) as exc:
        return _refused(change, rel, source, f"cannot read the file: {exc}")

    def planned(target: str | None, base: str | None) -> PlannedFile:
        return PlannedFile(path=rel, action=action, source=source, current=base, target=target)

    if action == "create":
        if now is not None and now != change.after:
            return _refused(change, rel, source, "the file was created in the editor meanwhile")
        return planned(change.after, now)
    if action == "delete":
        if now is not None and now != change.before:
            return _refused(change, rel, source, "the file was edited since the run started")
        return planned(None, now)
    if now is None:
        return _refused(change, rel, source, f"{source} no longer exists")
    before = change.before if change.before is not None else now
    target = change.after if change.after is not None else before
    if now != before:
        merged = rebase(before, now, target) if rebase is not None else None
        if merged is None:
            return _refused(
                change,
                rel,
                source,
                "the file was edited since the run started and the change no longer applies",
            )
        target = merged
    if action == "rename" and existing is not None:
        return _refused(change, rel, source, "the rename target already exists")
    return planned(target, now)


def read_text(path: Path) -> str | None:
    """A regular file's text (None when absent); never follows a final symbolic link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise IsADirectoryError(f"{path} is not a regular file")
        data = fh.read()
    return data.decode("utf-8")
