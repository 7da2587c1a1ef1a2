"""Writing accepted changes into the user's workspace, refusing files the user changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from driveros.review._errors import ConflictError, ReviewError
from driveros.review._files import (
    atomic_write,
    blob_sha,
    current_sha,
    read_scratch,
    remove_file,
)
from driveros.review._models import Conflict, FileChange
from driveros.review._plan import path_problem


def _expected(path: str, sha: str | None, disk_baseline: Mapping[str, str | None]) -> str | None:
    # An overlaid file's baseline is the buffer; on disk the user still has the old bytes.
    return disk_baseline.get(path, sha)


def find_conflicts(
    workspace: Path, changes: Sequence[FileChange], disk_baseline: Mapping[str, str | None]
) -> list[Conflict]:
    """Files the user changed since the baseline (their version would be clobbered)."""
    conflicts: list[Conflict] = []
    for ch in changes:
        # Where a file may be written or removed: the review planner's rule, shared with the
        # language server (never through a symbolic link, never over a directory).
        blocked = False
        for rel in ch.paths:
            removing = rel == ch.old_path or ch.action == "delete"
            problem = path_problem(workspace, rel, remove=removing)
            if problem is not None:
                conflicts.append(Conflict(path=rel, reason=problem))
                blocked = True
        if blocked:
            continue
        target_now = current_sha(workspace / ch.path)
        if ch.action == "rename":
            assert ch.old_path is not None
            old_now = current_sha(workspace / ch.old_path)
            if old_now is not None and old_now != _expected(
                ch.old_path, ch.before_sha, disk_baseline
            ):
                conflicts.append(
                    Conflict(
                        path=ch.old_path, reason="changed in the workspace since the run started"
                    )
                )
            if target_now is not None and target_now != ch.after_sha:
                conflicts.append(
                    Conflict(path=ch.path, reason="created in the workspace since the run started")
                )
        elif ch.action == "create":
            expected = _expected(ch.path, None, disk_baseline)
            if target_now not in (None, expected, ch.after_sha):
                conflicts.append(
                    Conflict(path=ch.path, reason="created in the workspace since the run started")
                )
        else:
            expected = _expected(ch.path, ch.before_sha, disk_baseline)
            if target_now not in (expected, ch.after_sha) and not (
                ch.action == "delete" and target_now is None
            ):
                reason = (
                    "deleted in the workspace since the run started"
                    if target_now is None
                    else "changed in the workspace since the run started"
                )
                conflicts.append(Conflict(path=ch.path, reason=reason))
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
