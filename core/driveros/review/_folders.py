"""Scratch views of a run's writable added folders (``--add-dir DIR:rw``), reviewed with the
workspace's own copy.

Each folder gets its own :class:`ScratchWorkspace` (the same view machinery, baseline, planner
and conflict rules as the workspace's). Its changes are named by absolute path (the folder's
real path, then the file's: ``/home/me/lib/util.py``), so they never collide with the
workspace's relative paths; their diffs' ``a/``/``b/`` headers carry the same absolute path.
:func:`apply_together` checks every folder before it writes any.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from driveros._together import all_of
from driveros.review._apply import find_conflicts
from driveros.review._checkpoints import Checkpoints, checkpoints_of
from driveros.review._errors import ConflictError, ReviewError, UnknownPathError
from driveros.review._models import ApplyResult, Conflict, FileChange
from driveros.review._scratch import ScratchWorkspace


def _qualified_diff(change: FileChange, at: str) -> str:
    """``change.diff`` with its header lines naming ``at/rel`` for each side's ``rel``."""
    old, new = change.old_path or change.path, change.path
    out: list[str] = []
    in_header = True
    for line in change.diff.splitlines(keepends=True):
        end = line[len(line.rstrip("\n")) :]
        if line.startswith("@@"):
            in_header = False
        elif line.startswith("diff --git a/"):
            in_header = True
            line = f"diff --git a{at}/{old} b{at}/{new}{end}"
        elif in_header and line.startswith(("--- a/", "+++ b/")):
            line = f"{line[:5]}{at}/{line[6:]}"
        elif in_header and line.startswith(("rename from ", "rename to ")):
            head, _, rest = line.partition(" ")[2].partition(" ")
            line = f"rename {head} {at}/{rest}"
        elif in_header and line.startswith("Binary files "):
            line = line.replace(f" a/{old} ", f" a{at}/{old} ", 1)
            line = line.replace(f" b/{new} ", f" b{at}/{new} ", 1)
        out.append(line)
    return "".join(out)


def qualified(change: FileChange, at: str) -> FileChange:
    """``change`` (relative to folder ``at``) named by absolute paths."""
    return change.model_copy(
        update={
            "path": f"{at}/{change.path}",
            "old_path": None if change.old_path is None else f"{at}/{change.old_path}",
            "diff": _qualified_diff(change, at),
        }
    )


async def conflicts_of(scratch: ScratchWorkspace, paths: Iterable[str] | None) -> list[Conflict]:
    """What ``scratch.apply(paths)`` would refuse now; nothing is written."""
    await scratch.changes()
    chosen = scratch._not_applied() if paths is None else scratch._select(paths)
    lay = scratch._lay
    return await asyncio.to_thread(find_conflicts, lay.workspace, chosen, lay.disk_baseline)


class FolderViews:
    """The scratch views of a run's writable added folders, by the folder's real path."""

    def __init__(self, views: dict[Path, ScratchWorkspace] | None = None) -> None:
        self.views: dict[Path, ScratchWorkspace] = dict(views or {})

    def __bool__(self) -> bool:
        return bool(self.views)

    @classmethod
    async def create(
        cls,
        folders: Sequence[Path],
        *,
        defer_baseline: bool = False,
        has: FolderViews | None = None,
        container: str | None = None,
        hide_git: bool = False,
    ) -> FolderViews:
        """A view of each of ``folders`` (with ``has``'s views: one there is kept, not made
        again; ``container``, ``hide_git``: as for :meth:`ScratchWorkspace.create`). When one
        fails, those made are closed."""
        made = cls(has.views if has is not None else None)
        try:
            for folder in folders:
                if folder not in made.views:
                    made.views[folder] = await ScratchWorkspace.create(
                        folder,
                        defer_baseline=defer_baseline,
                        container=container,
                        hide_git=hide_git,
                    )
        except BaseException:
            await cls(
                {f: v for f, v in made.views.items() if has is None or f not in has.views}
            ).aclose()
            raise
        return made

    @property
    def roots(self) -> dict[Path, Path]:
        """Where each folder's files are while the run works: folder -> its view."""
        return {at: view.path for at, view in self.views.items()}

    def start_baseline(self) -> None:
        for view in self.views.values():
            view.start_baseline()

    async def baseline_recorded(self) -> None:
        await all_of(*(view.baseline_recorded() for view in self.views.values()))

    async def changes(self) -> list[FileChange]:
        """Every folder's changes, named by absolute path, sorted."""
        found: list[FileChange] = []
        for at, view in self.views.items():
            found += [qualified(c, str(at)) for c in await view.changes()]
        return sorted(found, key=lambda c: c.path)

    def split(self, paths: Iterable[str]) -> tuple[list[str], dict[Path, list[str]]]:
        """``paths`` as the workspace's and, per folder, its own (relative) paths."""
        rest: list[str] = []
        by_folder: dict[Path, list[str]] = {}
        for path in paths:
            for at in self.views:
                if path.startswith(f"{at}/"):
                    by_folder.setdefault(at, []).append(path[len(str(at)) + 1 :])
                    break
            else:
                if path.startswith("/"):
                    raise UnknownPathError(f"not among the proposed changes: {path}", paths=[path])
                rest.append(path)
        return rest, by_folder

    async def record(self, turn: int, tools: Sequence[str]) -> list[str]:
        """A checkpoint of every folder that changed since its last one (each in its own
        private repository, at ``turn``); the files they changed, by absolute path."""
        changed: list[str] = []
        for at, view in self.views.items():
            record = await checkpoints_of(view).record(turn, tools)
            if record is not None:
                changed += [f"{at}/{p}" for p in record.files]
        return changed

    async def changes_at(self, turn: int, *, only: bool = False) -> list[FileChange]:
        """The folders' changes up to the run's checkpoint at ``turn`` (``only``: those of
        that turn alone), named by absolute path."""
        found: list[FileChange] = []
        for at, view in self.views.items():
            cps = checkpoints_of(view)
            if only:
                if not any(c.turn == turn for c in cps.records):
                    continue
                changes = await cps.changes(turn=turn)
            else:
                changes = await cps.changes(through=through_turn(view, turn))
            found += [qualified(c, str(at)) for c in changes]
        return sorted(found, key=lambda c: c.path)

    async def revert_to(self, turn: int) -> list[str]:
        """Each folder back to what it was at the run's checkpoint of ``turn``; the paths that
        changed back, by absolute path."""
        back: list[str] = []
        for at, view in self.views.items():
            done = await checkpoints_of(view).revert(through_turn(view, turn))
            back += [f"{at}/{p}" for p in done]
        return back

    async def fork(self, turn: int) -> FolderViews:
        """New views of the same folders holding their changes up to the run's checkpoint at
        ``turn`` (a fork of the run; these views are unchanged)."""
        made = await FolderViews.create(list(self.views))
        try:
            for at, view in self.views.items():
                through = through_turn(view, turn)
                await checkpoints_of(view).write_into(made.views[at].path, through=through)
        except BaseException:
            await made.aclose()
            raise
        return made

    async def aclose(self) -> None:
        """Close every view (a kept one stays on disk: see ScratchWorkspace.keep)."""
        for view in self.views.values():
            await view.aclose()

    async def discard(self) -> None:
        for view in self.views.values():
            await view.discard()


async def apply_together(
    scratch: ScratchWorkspace, folders: FolderViews, paths: Iterable[str] | None = None
) -> ApplyResult:
    """Apply the workspace's and the folders' changes (``paths``: absolute for a folder's;
    None: every change not applied yet). Every folder is checked first, with the planner's
    conflict rules: any conflict anywhere raises :class:`ConflictError` and writes nothing in
    any folder. Then each folder is written all or nothing, the workspace first."""
    if paths is None:
        own: list[str] | None = None
        theirs: dict[Path, list[str] | None] = dict.fromkeys(folders.views)
    else:
        own, split = folders.split(paths)
        theirs = {at: split[at] for at in split}
    found = await conflicts_of(scratch, own) if own is None or own else []
    clean: list[str] = []
    for at, rels in theirs.items():
        found += _in_folder(at, await conflicts_of(folders.views[at], rels))
    if found:
        bad = {c.path for c in found}
        every = [*(await scratch.changes()), *(await folders.changes())]
        clean = [c.path for c in every if not bad.intersection(c.paths)]
        if paths is not None:
            wanted = set(paths)
            clean = [p for p in clean if p in wanted]
        raise _folders_changed("applied", found, clean)
    written: list[str] = []
    if own is None or own:
        written += (await scratch.apply(own)).applied
    for at, rels in theirs.items():
        with _partly(written, at):
            done = await folders.views[at].apply(rels)
        written += [f"{at}/{p}" for p in done.applied]
    return ApplyResult(applied=written)


def _in_folder(at: Path | str, conflicts: Iterable[Conflict]) -> list[Conflict]:
    """``conflicts`` of the folder ``at`` named by absolute path ("": the workspace's own)."""
    return [Conflict(path=f"{at}/{c.path}" if at else c.path, reason=c.reason) for c in conflicts]


def _folders_changed(done: str, found: list[Conflict], clean: list[str]) -> ConflictError:
    """The refusal of an operation (``done``: "applied", "committed") that writes nothing."""
    names = ", ".join(sorted({c.path for c in found}))
    return ConflictError(
        f"not {done}: the folders changed since the run started ({names})",
        conflicts=found,
        clean=clean,
    )


@contextlib.contextmanager
def _partly(written: list[str], at: Path | str) -> Iterator[None]:
    """A folder's write failure after others were written: the error lists every file
    left written (``context["written"]``), the earlier folders' too."""
    try:
        yield
    except ReviewError as exc:
        if not written:
            raise
        left = [*written, *(f"{at}/{p}" for p in exc.context.get("written") or [])]
        raise ReviewError(
            f"partly applied: {exc}; the folders before {at} were written", written=left
        ) from exc


async def commit_together(
    scratch: ScratchWorkspace, folders: FolderViews, message: str
) -> list[ApplyResult]:
    """``commit(message)`` in the workspace and in each folder with changes (each in its own
    repository), after :func:`apply_together`'s check of every folder."""
    found = await conflicts_of(scratch, None)
    for at, view in folders.views.items():
        found += _in_folder(at, await conflicts_of(view, None))
    if found:
        raise _folders_changed("committed", found, [])
    done: list[ApplyResult] = []
    if await scratch.changes():
        done.append(await scratch.commit(message))
    for at, view in folders.views.items():
        if await view.changes():
            result = await view.commit(message)
            done.append(
                result.model_copy(update={"applied": [f"{at}/{p}" for p in result.applied]})
            )
    return done


def through_turn(view: ScratchWorkspace, turn: int) -> int:
    """The last checkpoint of a folder's ``view`` recorded at or before ``turn`` (0: none)."""
    records = checkpoints_of(view).records
    return max((c.checkpoint for c in records if c.turn <= turn), default=0)


async def apply_checkpoints(
    main: Checkpoints, folders: FolderViews, *, through: int, paths: Iterable[str] | None
) -> ApplyResult:
    """:meth:`Checkpoints.apply` of the run's checkpoint ``through`` in the workspace and
    each folder (``paths``: absolute for a folder's). Every folder is checked first: any
    conflict raises :class:`ConflictError` and nothing is written anywhere."""
    turn = main.turn_of(through)
    own, split = folders.split(paths) if paths is not None else (None, {})
    plans: list[tuple[str, Checkpoints, int, list[str] | None]] = []
    if own is None or own:
        plans.append(("", main, through, own))
    for at, view in folders.views.items():
        if paths is None or at in split:
            cps = checkpoints_of(view)
            plans.append((str(at), cps, through_turn(view, turn), split.get(at)))
    found: list[Conflict] = []
    for where, cps, n, rels in plans:
        changes = await cps.changes(through=n)
        if rels is not None:
            changes = [c for c in changes if set(rels).intersection(c.paths)]
        lay = cps._lay
        mine = await asyncio.to_thread(find_conflicts, lay.workspace, changes, lay.disk_baseline)
        found += _in_folder(where, mine)
    if found:
        raise _folders_changed("applied", found, [])
    written: list[str] = []
    for where, cps, n, rels in plans:
        with _partly(written, where):
            done = await cps.apply(through=n, paths=rels)
        written += [f"{where}/{p}" if where else p for p in done.applied]
    return ApplyResult(applied=written)
