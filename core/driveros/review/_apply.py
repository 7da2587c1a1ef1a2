"""The CLI's rendering of the review plan: the agent's bytes written into the user's
workspace, all of them or none.

Nothing is written when the planner (:mod:`driveros.review._plan`) refuses a file, or when the
file systems holding the targets lack the space the new files need. Otherwise every new file
is first staged next to its target (same directory, so same file system; a hidden
``.NAME.driveros-*.tmp`` name) and flushed to disk; only then is each renamed into place, the
original kept aside under a hidden ``.NAME.driveros-*.orig`` name (a hard link where the file
system has them) until every file is in place. Any failure on the way puts the originals
back and removes what was staged: the workspace is as it was, and the error says so. Only
when putting an original back fails too does the error name the files left written
(``ReviewError.context["written"]``).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from driveros._plural import files
from driveros.review._errors import ConflictError, ReviewError
from driveros.review._files import blob_sha, new_perms, read_scratch, remove_file
from driveros.review._models import Conflict, FileChange
from driveros.review._plan import plan_file, read_bytes

log = logging.getLogger(__name__)


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
    """Check every file first, then write them all or none. Blocking: run in a thread.

    Raises :class:`ConflictError` (nothing written) when any selected file conflicts, and
    :class:`ReviewError` when writing failed: nothing written (the originals restored), or,
    when a restore failed too, the files left written in ``context["written"]``.
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
    steps: list[Step] = []
    for ch in changes:
        if ch.action != "delete":
            steps.append(Step(ch.path, workspace / ch.path, payloads[ch.path], ch.mode))
        if ch.action == "delete":
            steps.append(Step(ch.path, workspace / ch.path))
        elif ch.action == "rename":
            assert ch.old_path is not None
            steps.append(Step(ch.old_path, workspace / ch.old_path))
    write_all(workspace, steps)
    return [ch.path for ch in changes]


@dataclass
class Step:
    """One path of an all-or-nothing write: replaced by ``data`` (None: removed)."""

    rel: str
    target: Path
    data: bytes | None = None
    mode: str | None = None
    #: The new content under its hidden name, flushed, beside the target.
    staged: Path | None = None
    #: The original under its hidden name while the write is under way.
    aside: Path | None = None
    #: The original is still at ``target`` too (``aside`` is a hard link to it).
    linked: bool = False
    #: The new content (or the removal) is in place.
    placed: bool = False
    made_dirs: list[Path] = field(default_factory=list)


def write_all(root: Path, steps: list[Step]) -> None:
    """Carry out ``steps`` inside ``root``: all of them, or none (see the module's doc)."""
    check_space(steps)
    current = None
    try:
        for current in steps:
            _stage(root, current)
    except OSError as exc:
        _discard(steps)
        assert current is not None
        raise ReviewError(
            f"not applied: could not write {current.rel} ({_reason(exc)}); nothing was written",
            path=current.rel,
            written=[],
        ) from exc
    try:
        for current in steps:
            _place(current)
    except OSError as exc:
        assert current is not None
        left = _roll_back(steps)
        _discard(steps)
        what = "write" if current.data is not None else "remove"
        if not left:
            raise ReviewError(
                f"not applied: could not {what} {current.rel} ({_reason(exc)}); every file "
                "was restored; nothing was written",
                path=current.rel,
                written=[],
            ) from exc
        raise ReviewError(
            f"partly applied: could not {what} {current.rel} ({_reason(exc)}), and putting "
            f"back the originals failed; left written: {', '.join(left)}",
            path=current.rel,
            written=left,
        ) from exc
    _settle(root, steps)


def check_space(steps: Sequence[Step]) -> None:
    """Refuse, before anything is written, when a file system lacks the room the new files
    need (their size rounded up to its blocks, and one inode each)."""
    need: dict[int, list[int]] = {}
    where: dict[int, Path] = {}
    for step in steps:
        if step.data is None:
            continue
        probe = _existing_ancestor(step.target)
        try:
            st = os.statvfs(probe)
            dev = probe.stat().st_dev
        except OSError:
            continue  # the write itself will say what is wrong
        block = st.f_frsize or st.f_bsize or 4096
        blocks = -(-len(step.data) // block) + 1
        total = need.setdefault(dev, [0, 0, block])
        total[0] += blocks
        total[1] += 1
        where[dev] = probe
    for dev, (blocks, count, block) in need.items():
        st = os.statvfs(where[dev])
        free = st.f_bfree if os.geteuid() == 0 else st.f_bavail
        inodes = st.f_ffree if os.geteuid() == 0 else st.f_favail
        if blocks > free or (st.f_files and count > inodes):
            raise ReviewError(
                f"not applied: not enough space for {files(count)} "
                f"({_size(blocks * block)} needed, {_size(free * block)} free "
                f"on the file system of {where[dev]}); nothing was written",
                needed=blocks * block,
                free=free * block,
            )


def _existing_ancestor(path: Path) -> Path:
    probe = path.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def _size(n: int) -> str:
    return f"{n / 1024:.0f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MiB"


def _hidden(target: Path, suffix: str) -> Path:
    return target.parent / f".{target.name}.driveros-{os.urandom(4).hex()}{suffix}"


def _stage(root: Path, step: Step) -> None:
    """Write the new content beside the target and flush it (nothing visible changes)."""
    if step.data is None:
        return
    parent = step.target.parent
    missing = []
    while not parent.exists() and parent != root:
        missing.append(parent)
        parent = parent.parent
    for d in reversed(missing):
        d.mkdir()
        step.made_dirs.append(d)
    tmp = _hidden(step.target, ".tmp")
    if step.mode == "120000":
        tmp.symlink_to(os.fsdecode(step.data))
        step.staged = tmp
        return
    perms = new_perms(step.target, step.mode)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    step.staged = tmp
    try:
        view = memoryview(step.data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, perms)
        os.fsync(fd)
    finally:
        os.close(fd)


def _place(step: Step) -> None:
    """Put the new content (or the removal) in place, keeping the original aside."""
    target = step.target
    if os.path.lexists(target):
        aside = _hidden(target, ".orig")
        if step.data is not None:
            try:
                os.link(target, aside, follow_symlinks=False)
                step.aside, step.linked = aside, True
            except OSError:
                pass  # no hard links here: the original is moved aside instead
        if step.aside is None:
            target.rename(aside)
            step.aside = aside
            if step.data is None:
                step.placed = True
                return
    elif step.data is None:
        step.placed = True  # already gone
        return
    assert step.staged is not None
    step.staged.rename(target)
    step.staged = None
    step.placed = True


def _roll_back(steps: list[Step]) -> list[str]:
    """Undo every placed step, newest first; the paths that could not be put back."""
    left: list[str] = []
    for step in reversed(steps):
        try:
            if step.aside is not None and (step.placed or not step.linked):
                step.aside.rename(step.target)  # the original, back in place
                step.aside = None
            elif step.placed and step.data is not None:
                step.target.unlink()  # a new file: gone again
            elif step.aside is not None:
                step.aside.unlink()  # a link to the original, still in place
                step.aside = None
            step.placed = False
            for d in reversed(step.made_dirs):
                with contextlib.suppress(OSError):
                    d.rmdir()
        except OSError as exc:
            log.warning("driveros: could not restore %s: %s", step.target, exc)
            if step.placed:
                left.append(step.rel)
    return sorted(left)


def _discard(steps: list[Step]) -> None:
    """Remove what was staged and not placed (best effort: hidden names)."""
    for step in steps:
        if step.staged is not None:
            with contextlib.suppress(OSError):
                step.staged.unlink()
            step.staged = None
        if not step.placed:
            for d in reversed(step.made_dirs):
                with contextlib.suppress(OSError):
                    d.rmdir()


def _settle(root: Path, steps: list[Step]) -> None:
    """Everything is in place: flush the directories, drop the originals kept aside and the
    directories a removal left empty."""
    for parent in {step.target.parent for step in steps}:
        with contextlib.suppress(OSError):
            fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    for step in steps:
        if step.aside is not None:
            try:
                step.aside.unlink()
            except OSError as exc:
                log.warning("driveros: could not remove %s: %s", step.aside, exc)
        if step.data is None:
            remove_file(root, step.target)


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    return exc.strerror or str(exc)
