"""The CLI's rendering of the review plan: the agent's bytes written into the user's
workspace, nothing at all when the planner (:mod:`driveros.review._plan`) refuses a file."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from driveros.review._errors import ConflictError, ReviewError
from driveros.review._files import atomic_write, blob_sha, read_scratch, remove_file
from driveros.review._models import Conflict, FileChange
from driveros.review._plan import plan_file, read_bytes


def find_conflicts(
    workspace: Path, changes: Sequence[FileChange], disk_baseline: Mapping[str, str | None]
) -> list[Conflict]:
    """The changes the review planner refuses to write into the workspace as it is now (the
    same rule as the language server's edit, without its rebase)."""
    conflicts: list[Conflict] = []
    for ch in changes:
        decided = plan_file(
            workspace,
            ch,
            current=lambda rel: read_bytes(workspace / rel),
            text_only=False,
            baseline=disk_baseline,
        )
        if decided.conflict is not None:
            conflicts.append(Conflict(path=decided.conflict_path, reason=decided.conflict))
    return conflicts


def apply_changes(
    workspace: Path,
    scratch: Path,
    changes: Sequence[FileChange],
    disk_baseline: Mapping[str, str | None],
) -> list[str]:
    """Check every file first, then write each one atomically. Blocking: run in a thread.

    Raises :class:`ConflictError` (nothing written) when any selected file conflicts.
    """
    conflicts = find_conflicts(workspace, changes, disk_baseline)
    if conflicts:
        bad = {c.path for c in conflicts}
        clean = [c.path for c in changes if not bad.intersection(c.paths)]
        names = ", ".join(sorted(bad))
        raise ConflictError(
            f"not applied: the workspace changed since the run started ({names})",
            conflicts=conflicts,
            clean=clean,
        )
    payloads: dict[str, bytes] = {}
    for ch in changes:
        if ch.action == "delete":
            continue
        data = read_scratch(scratch / ch.path)
        if blob_sha(data) != ch.after_sha:
            raise ReviewError(
                f"{ch.path} changed in the scratch copy while being applied; review it again",
                path=ch.path,
            )
        payloads[ch.path] = data
    applied: list[str] = []
    for ch in changes:
        if ch.action != "delete":
            atomic_write(workspace / ch.path, payloads[ch.path], mode=ch.mode)
        if ch.action == "delete":
            remove_file(workspace, workspace / ch.path)
        elif ch.action == "rename":
            assert ch.old_path is not None
            remove_file(workspace, workspace / ch.old_path)
        applied.append(ch.path)
    return applied
