"""The review planner: for each accepted change, what to write or why it cannot be written.

The one rule for every writer of the user's tree; each writer renders the plan its own way
(the CLI's ``apply``/``commit`` writes the agent's bytes, the language server builds a
``WorkspaceEdit``, the ACP server asks the client to write the text):

- a path is written or removed only through real directories of the workspace: a parent
  that is a symbolic link (wherever it points), a file where a directory should be, a path
  that resolves outside the workspace, or a directory where the file should be is a conflict;
- a file's current content (the open buffer, else the disk) must be what the run started
  from, or already the agent's version (then nothing is left to write: ``done``); a
  language server may instead re-apply the agent's change on the new text (``rebase``), the
  CLI refuses;
- a rename needs its old file as the run started (or the rename already made) and no other
  file at the new path; a deletion of a file the user deleted too is done;
- an editor writes text only (``text_only``): binary, oversized and symbolic-link changes are
  conflicts there ("reviewed with the CLI"), which writes them.

Blocking (reads the file system): callers run it off the event loop.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from driveros.review._errors import ReviewError
from driveros.review._files import blob_sha, check_relpath, inside

Rebase = Callable[[str, str, str], str | None]
"""``rebase(base, theirs, ours)``: ``ours``' change re-applied on ``theirs``, or None."""

Current = Callable[[str], str | bytes | None]
"""The current content of a workspace-relative path, None when absent: its text (an editor's
buffer, else the disk) or its bytes (a symbolic link's: the link's target)."""


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
    when it differs), delete ``path`` (``target`` None), or nothing (``conflict`` says why,
    about ``conflict_path``; or ``done``: the workspace already holds the agent's version).

    ``current`` is the content the decision was made on (the base of the edit): a writer that
    cannot lock the file must check it is still there right before and after writing.
    """

    path: str
    action: str
    #: The path the content comes from (``old_path`` of a rename, else ``path``).
    source: str
    current: str | bytes | None
    #: The text to write (the agent's, or rebased); None for a deletion, and for a binary or
    #: oversized change (a byte writer takes the agent's bytes).
    target: str | None
    conflict: str | None = None
    #: Which of the change's paths the conflict is about.
    conflict_path: str = ""
    #: Nothing is left to write: the workspace already holds the agent's version.
    done: bool = False


def _refused(change: Any, rel: str, source: str, why: str, about: str | None = None) -> PlannedFile:
    return PlannedFile(
        path=rel,
        action=str(change.action),
        source=source,
        current=None,
        target=None,
        conflict=why,
        conflict_path=about or rel,
    )


def _holds(now: str | bytes, text: str | None, sha: str | None) -> bool:
    """Whether content ``now`` is the side of a change with ``text`` and blob id ``sha``."""
    if isinstance(now, str) and text is not None:
        return now == text
    if sha is None:
        return False
    data = now.encode("utf-8", "surrogateescape") if isinstance(now, str) else now
    return blob_sha(data) == sha


def plan_file(
    workspace: Path,
    change: Any,
    *,
    current: Current,
    rebase: Rebase | None = None,
    text_only: bool = True,
    baseline: Mapping[str, str | None] | None = None,
) -> PlannedFile:
    """Decide one change (a ``FileChange``-like object) against the workspace as it is now.

    ``current`` gives what the user has now (their open buffer, else the file on disk); it is
    only asked about paths that passed :func:`path_problem`. ``rebase`` (optional) re-applies
    the change on a file that was edited since the run started. ``text_only`` (an editor)
    refuses what cannot be written as text. ``baseline`` (path -> blob id, None for absent)
    overrides the run's starting point of a path whose disk content differed from what the
    run saw (a buffer overlaid on the scratch copy: on disk the user still has the old bytes).
    """
    rel = str(change.path)
    action = str(change.action)
    source = str(change.old_path) if action == "rename" and change.old_path else rel
    before_sha = getattr(change, "before_sha", None)
    after_sha = getattr(change, "after_sha", None)
    base = baseline or {}
    if text_only:
        if change.binary:
            return _refused(change, rel, source, "binary files cannot be proposed as text edits")
        if action in ("create", "modify") and change.after is None:
            return _refused(change, rel, source, "the file is too large to propose as a text edit")
        if getattr(change, "mode", None) == "120000" or (workspace / rel).is_symlink():
            return _refused(change, rel, source, "symbolic links are reviewed with the CLI")
    problem = path_problem(workspace, rel, remove=action == "delete")
    about = rel
    if problem is None and source != rel:
        about = source
        problem = path_problem(workspace, source, remove=True)
        if problem is None and text_only and (workspace / source).is_symlink():
            problem = "symbolic links are reviewed with the CLI"
    if problem is not None:
        return _refused(change, rel, source, problem, about)
    try:
        now = current(source)
        existing = current(rel) if source != rel else now
    except (OSError, UnicodeDecodeError) as exc:
        return _refused(change, rel, source, f"cannot read the file: {exc}")

    def at_start(path: str, content: str | bytes | None) -> bool:
        if path in base:  # the disk as it was when the run started, not the overlaid buffer
            want = base[path]
            if content is None or want is None:
                return content is None and want is None
            return _holds(content, None, want)
        if action == "create":
            return content is None
        return content is not None and _holds(content, change.before, before_sha)

    def agents(content: str | bytes | None) -> bool:
        return content is not None and _holds(content, change.after, after_sha)

    def planned(target: str | None, done: bool = False) -> PlannedFile:
        return PlannedFile(
            path=rel, action=action, source=source, current=now, target=target, done=done
        )

    if action == "create":
        if at_start(rel, now) or agents(now):
            return planned(change.after, done=now is not None and agents(now))
        return _refused(change, rel, source, "created in the workspace since the run started")
    if action == "delete":
        if now is None:
            return planned(None, done=True)
        if at_start(rel, now):
            return planned(None)
        return _refused(change, rel, source, "changed in the workspace since the run started")
    if action == "rename" and existing is not None:
        if now is None and agents(existing):
            return planned(change.after, done=True)  # the user made the same rename
        return _refused(change, rel, source, "created in the workspace since the run started")
    if now is None:
        why = "deleted in the workspace since the run started"
        return _refused(change, rel, source, why, source)
    if at_start(source, now):  # an oversized rename keeps its text: the current one
        return planned(change.after if change.after is not None else _text(now))
    if action == "modify" and agents(now):
        return planned(change.after, done=True)
    merged = None
    if rebase is not None and isinstance(now, str) and source not in base:
        if change.before is not None and change.after is not None:
            merged = rebase(change.before, now, change.after)
        if merged is None:
            why = "the file was edited since the run started and the change no longer applies"
            return _refused(change, rel, source, why, source)
        return planned(merged)
    why = "changed in the workspace since the run started"
    return _refused(change, rel, source, why, source)


def _text(content: str | bytes) -> str | None:
    return content if isinstance(content, str) else None


def _regular_file(path: Path) -> bytes | None:
    """A regular file's bytes, None when absent; never follows a final symbolic link nor
    blocks on a FIFO (anything but a regular file raises OSError)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise IsADirectoryError(f"{path} is not a regular file")
        return fh.read()


def read_bytes(path: Path) -> bytes | None:
    """A file's bytes, a symbolic link's target (never followed), None when absent; anything
    else (a directory, a device) raises OSError."""
    if path.is_symlink():
        return os.fsencode(path.readlink())
    return _regular_file(path)


def read_text(path: Path) -> str | None:
    """A regular file's text (None when absent); never follows a final symbolic link."""
    data = _regular_file(path)
    return None if data is None else data.decode("utf-8")
