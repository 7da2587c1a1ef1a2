"""Retention of the sessions ``driveros acp`` keeps for ``session/load``.

``driveros acp`` writes one file per session, ``<state dir>/acp-sessions/<id>.json``, after
every change of the session; its mtime is when the session was last used. Garbage collection
(:func:`driveros.state.collect_garbage`) removes a session not used for
:data:`SESSION_MAX_AGE_S` and, past :data:`SESSION_MAX_COUNT` sessions, the least recently
used ones (see docs/acp.md).
"""

from __future__ import annotations

import contextlib
import re
import stat
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

#: The state directory's subdirectory holding the kept ACP sessions.
SESSIONS_DIR = "acp-sessions"
#: A kept session not used for this long is removed: 30 days.
SESSION_MAX_AGE_S = 30 * 24 * 3600.0
#: At most this many sessions are kept (the least recently used go first).
SESSION_MAX_COUNT = 500
#: A session's file name: 32 hex digits and ``.json``.
SESSION_FILE = re.compile(r"[0-9a-f]{32}\.json")
#: An interrupted write's temporary file older than this is removed.
_STRAY_AGE_S = 24 * 3600.0


class ForgottenSession(BaseModel):
    """One kept session garbage collection removed."""

    model_config = ConfigDict(frozen=True)

    id: str
    #: ``expired`` (unused for longer than the retention) or ``over_count`` (the oldest
    #: past the maximum number kept).
    reason: Literal["expired", "over_count"]


def prune_sessions(
    state: Path, *, now: float, max_age: float, max_count: int
) -> tuple[list[ForgottenSession], list[str]]:
    """Remove the kept sessions past the retention; returns what was removed and the errors.

    Blocking. Only regular files named like a session are touched (a symbolic link or a
    directory in the folder is left alone, never followed).
    """
    folder = state / SESSIONS_DIR
    sessions: list[tuple[float, str, Path]] = []
    strays: list[Path] = []
    try:
        entries = list(folder.iterdir())
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], [f"cannot list {folder}: {exc}"]
    for entry in entries:
        try:
            info = entry.lstat()
        except OSError:
            continue  # removed meanwhile
        if not stat.S_ISREG(info.st_mode):
            continue
        if SESSION_FILE.fullmatch(entry.name):
            sessions.append((info.st_mtime, entry.name, entry))
        elif entry.name.startswith(".session-") and now - info.st_mtime > _STRAY_AGE_S:
            strays.append(entry)
    sessions.sort(reverse=True)  # most recently used first
    doomed: list[tuple[Path, Literal["expired", "over_count"]]] = []
    for rank, (mtime, _, path) in enumerate(sessions):
        if now - mtime > max_age:
            doomed.append((path, "expired"))
        elif rank >= max(max_count, 0):
            doomed.append((path, "over_count"))
    removed: list[ForgottenSession] = []
    errors: list[str] = []
    for path, reason in doomed:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            errors.append(f"kept ACP session {path.stem}: {exc}")
            continue
        removed.append(ForgottenSession(id=path.stem, reason=reason))
    for path in strays:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
    return removed, errors
