"""Checkpoints of a scratch copy: the copy's state after each turn that changed it.

A checkpoint is a tree in the copy's private repository, written from its private index after
the turn's changes are staged (for a view: only what its upper layer holds), so recording one
costs what the run wrote, not the size of the workspace, and covers every effect of the turn:
file tools and shell commands alike. The user's repository and its index are never touched.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from driveros._finish import finish_then_reraise
from driveros._git import run_git, split_z
from driveros.review._apply import apply_changes
from driveros.review._changes import changes_from_raw, stage_all
from driveros.review._errors import ReviewError, UnknownPathError
from driveros.review._layout import Layout
from driveros.review._models import ApplyResult, FileChange
from driveros.review._stage import add_paths

if TYPE_CHECKING:
    from driveros.review._scratch import ScratchWorkspace

#: The key of the checkpoint list in a kept run's manifest.
MANIFEST_KEY = "checkpoints"


class CheckpointRecord(BaseModel):
    """One recorded state of the copy: after ``turn``, numbered from 1 in the run."""

    model_config = ConfigDict(frozen=True)

    checkpoint: int
    turn: int
    #: The tree id in the copy's private repository.
    tree: str
    #: Workspace-relative paths this checkpoint changed against the one before it.
    files: list[str] = Field(default_factory=list)
    #: The tool calls of the turn (names), when the caller recorded them.
    tools: list[str] = Field(default_factory=list)


def _diff_args(lay: Layout, old: str, new: str) -> list[str]:
    return [
        "diff-tree",
        "-r",
        "--raw",
        "-z",
        "--no-renames",
        "--no-abbrev",
        old,
        new,
        *lay.pathspec,
    ]


def _rel(lay: Layout, path: str) -> str:
    return path[len(lay.prefix) :] if lay.prefix and path.startswith(lay.prefix) else path


async def _blobs(lay: Layout, shas: Iterable[str]) -> dict[str, bytes]:
    """The contents of blobs of the private repository, by id."""
    wanted = sorted(set(shas))
    if not wanted:
        return {}
    _, out, _ = await run_git(
        ["cat-file", "--batch"],
        cwd=lay.work,
        repo=lay.private_store,
        stdin="".join(f"{s}\n" for s in wanted).encode(),
    )
    found: dict[str, bytes] = {}
    pos = 0
    for sha in wanted:
        end = out.index(b"\n", pos)
        header = out[pos:end].decode().split(" ")
        if len(header) != 3:
            raise ReviewError(f"blob {sha} is missing from the run's private repository")
        size = int(header[2])
        found[sha] = out[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1
    return found


def _write_file(root: Path, rel: str, data: bytes, mode: str | None) -> None:
    """Put ``data`` at ``root / rel`` as a file of git ``mode`` (a symlink for 120000),
    never through a symlinked directory (the copy's files are the agent's)."""
    target = root / rel
    parent = root
    for part in Path(rel).parts[:-1]:
        parent = parent / part
        if parent.is_symlink():
            raise ReviewError(f"{rel}: a parent directory is a symlink; not written", path=rel)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.is_file():
        target.unlink()
    if mode == "120000":
        target.symlink_to(os.fsdecode(data))
        return
    target.write_bytes(data)
    target.chmod(0o755 if mode == "100755" else 0o644)


def _restore(root: Path, changes: Sequence[FileChange], blobs: dict[str, bytes]) -> None:
    """Make ``root`` hold the "after" side of ``changes``. Blocking: run in a thread."""
    for c in changes:
        gone = [c.path] if c.action == "delete" else []
        if c.action == "rename" and c.old_path is not None:
            gone.append(c.old_path)
        for p in gone:
            target = root / p
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.is_symlink() or target.exists():
                target.unlink()
        if c.after_sha is not None:
            _write_file(root, c.path, blobs[c.after_sha], c.mode)


_OF: weakref.WeakKeyDictionary[ScratchWorkspace, Checkpoints] = weakref.WeakKeyDictionary()


def checkpoints_of(
    scratch: ScratchWorkspace, manifest: dict[str, Any] | None = None
) -> Checkpoints:
    """The checkpoints of ``scratch`` (one object per copy). ``manifest``: a kept run's
    manifest (:meth:`ScratchWorkspace.keep`), whose recorded checkpoints they start from
    (:meth:`Checkpoints.to_manifest` writes them)."""
    found = _OF.get(scratch)
    if found is None or manifest is not None:
        found = Checkpoints.from_manifest(scratch, manifest or {})
        _OF[scratch] = found
    return found


class Checkpoints:
    """The checkpoints of one scratch copy (see the module docstring). ``records`` are the
    ones recorded before (a kept run's, from its manifest)."""

    def __init__(self, scratch: ScratchWorkspace, records: Sequence[CheckpointRecord] = ()) -> None:
        self._scratch = scratch
        self._records = list(records)
        self._lock = asyncio.Lock()
        #: Added to the turn numbers recorded: a resumed run's turns continue the held run's.
        self.turn_offset = 0

    @classmethod
    def from_manifest(cls, scratch: ScratchWorkspace, manifest: dict[str, Any]) -> Checkpoints:
        raw = manifest.get(MANIFEST_KEY) or []
        return cls(scratch, [CheckpointRecord.model_validate(r) for r in raw])

    def to_manifest(self) -> list[dict[str, Any]]:
        return [c.model_dump() for c in self._records]

    def manifest_entry(self) -> dict[str, Any]:
        """What a kept copy's manifest holds of them (read back by :func:`checkpoints_of`)."""
        return {MANIFEST_KEY: self.to_manifest()}

    @property
    def records(self) -> list[CheckpointRecord]:
        return list(self._records)

    @property
    def _lay(self) -> Layout:
        return self._scratch._lay

    def turn_of(self, n: int) -> int:
        """The turn checkpoint ``n`` was recorded at (0: the baseline, or no such checkpoint);
        a run's added folders follow its checkpoints by turn (``driveros.review.FolderViews``)."""
        return next((c.turn for c in self._records if c.checkpoint == n), 0)

    def _tree_of(self, n: int) -> str:
        """The tree of checkpoint ``n`` (0: the baseline)."""
        if n == 0:
            return self._lay.baseline
        for c in self._records:
            if c.checkpoint == n:
                return c.tree
        known = ", ".join(str(c.checkpoint) for c in self._records) or "none"
        raise ReviewError(f"no checkpoint {n} in this run (checkpoints: {known})")

    async def _current_tree(self) -> str:
        lay = self._lay
        await self._scratch.baseline_recorded()
        await stage_all(lay)
        _, out, _ = await run_git(
            ["write-tree"],
            cwd=lay.work,
            repo=lay.private_repo,
        )
        return out.decode().strip()

    async def record(
        self, turn: int, tools: Sequence[str] = (), *, always: bool = False
    ) -> CheckpointRecord | None:
        """Record the copy as it is after ``turn``; None when it is unchanged since the last
        checkpoint (or the baseline), unless ``always`` (a run's other folders changed)."""
        async with self._lock:
            lay = self._lay
            tree = await self._current_tree()
            last = self._records[-1].tree if self._records else lay.baseline
            if tree == last and not always:
                return None
            _, out, _ = await run_git(
                ["diff-tree", "-r", "-z", "--name-only", "--no-renames", last, tree],
                cwd=lay.work,
                repo=lay.private_store,
            )
            files = sorted(_rel(lay, p) for p in split_z(out))
            cp = CheckpointRecord(
                checkpoint=len(self._records) + 1,
                turn=turn + self.turn_offset,
                tree=tree,
                files=files,
                tools=list(tools),
            )
            self._records.append(cp)
            return cp

    async def changes(
        self, *, through: int | None = None, turn: int | None = None
    ) -> list[FileChange]:
        """The changes up to checkpoint ``through`` (None: the last), or only those the
        checkpoint recorded at ``turn`` made."""
        lay = self._lay
        await self._scratch.baseline_recorded()
        if turn is not None:
            cp = next((c for c in self._records if c.turn == turn), None)
            if cp is None:
                raise ReviewError(f"turn {turn} recorded no checkpoint in this run")
            old, new = self._tree_of(cp.checkpoint - 1), cp.tree
        else:
            n = self._records[-1].checkpoint if through is None and self._records else through
            old, new = lay.baseline, self._tree_of(n or 0)
        _, raw, _ = await run_git(
            _diff_args(lay, old, new),
            cwd=lay.work,
            repo=lay.private_store,
        )
        return await changes_from_raw(lay, raw)

    async def apply(self, *, through: int, paths: Iterable[str] | None = None) -> ApplyResult:
        """Write the changes up to checkpoint ``through`` (those of ``paths`` only, when
        given) into the user's workspace: the same planner, conflict rules and all-or-nothing
        writes as :meth:`ScratchWorkspace.apply`."""
        lay = self._lay
        selected = await self.changes(through=through)
        if paths is not None:
            wanted = set(paths)
            known = {p for c in selected for p in c.paths}
            unknown = sorted(wanted - known)
            if unknown:
                raise UnknownPathError(
                    f"not among the changes through checkpoint {through}: {', '.join(unknown)}",
                    paths=unknown,
                )
            selected = [c for c in selected if wanted.intersection(c.paths)]
        blobs = await _blobs(lay, [c.after_sha for c in selected if c.after_sha])

        def write() -> list[str]:
            with tempfile.TemporaryDirectory(prefix="driveros-checkpoint-") as tmp:
                for c in selected:
                    if c.after_sha is not None:
                        _write_file(Path(tmp), c.path, blobs[c.after_sha], c.mode)
                return apply_changes(lay.workspace, Path(tmp), selected, lay.disk_baseline)

        try:
            written = await finish_then_reraise(asyncio.to_thread(write))
        except OSError as exc:
            raise ReviewError(
                f"could not write to the workspace: {exc}", path=exc.filename
            ) from exc
        return ApplyResult(applied=written)

    async def write_into(self, root: Path, *, through: int) -> list[str]:
        """Write the changes up to checkpoint ``through`` into another copy of the same
        workspace at ``root`` (a fork's scratch copy); the paths written or removed."""
        lay = self._lay
        selected = await self.changes(through=through)
        blobs = await _blobs(lay, [c.after_sha for c in selected if c.after_sha])
        await asyncio.to_thread(_restore, root, selected, blobs)
        return sorted({p for c in selected for p in c.paths})

    async def revert(self, to: int) -> list[str]:
        """Make the copy what it was at checkpoint ``to`` (0: the baseline) and drop the
        checkpoints after it; the paths that changed back. The user's files are untouched."""
        async with self._lock:
            lay = self._lay
            target = self._tree_of(to)
            now = await self._current_tree()
            _, raw, _ = await run_git(
                _diff_args(lay, now, target),
                cwd=lay.work,
                repo=lay.private_store,
            )
            back = await changes_from_raw(lay, raw)
            blobs = await _blobs(lay, [c.after_sha for c in back if c.after_sha])
            await finish_then_reraise(asyncio.to_thread(_restore, lay.path, back, blobs))
            paths = sorted({p for c in back for p in c.paths})
            # A file the run created and the revert removed leaves no trace in a view's
            # upper layer: the private index is told here.
            await add_paths(lay, [lay.prefix + p for p in paths], force=True)
            self._records = [c for c in self._records if c.checkpoint <= to]
            return paths
