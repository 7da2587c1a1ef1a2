"""Runs kept for later (``--review-action hold``): a review run's scratch copy, its checkpoints
and its conversation, kept in the state directory past the process that made it, so that a
later process can list, diff, apply, revert, resume, fork or discard it.

A held run is a kept scratch copy (:meth:`ScratchWorkspace.keep`) whose manifest has
``kind: "run"``; nothing of it touches the user's files until applied.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from driveros._errors import ConfigError
from driveros.llm import Message
from driveros.review import (
    Checkpoints,
    FolderViews,
    ScratchWorkspace,
    checkpoints_of,
    reopen_kept_where,
)

_HISTORY: TypeAdapter[list[Message]] = TypeAdapter(list[Message])
KIND = "run"
#: In the manifest of a held run's added folder's view: the run it belongs to.
FOLDER_OF = "folder_of"


@dataclass
class HeldRun:
    """One held run, reopened by this process (close it with :meth:`aclose`)."""

    run_id: str
    task: str
    workspace: Path
    #: When it was last held (seconds since the epoch).
    held_at: float
    #: The turns its conversation has had so far (a resumed run's turns continue from it).
    turns: int
    answer: str
    outcome: str
    #: The run it was forked from, and at which checkpoint (``--from``), if any.
    parent: str | None
    scratch: ScratchWorkspace
    history: list[Message]
    #: The views of its writable added folders (``--add-dir DIR:rw``), held with it.
    folders: FolderViews = field(default_factory=FolderViews)

    @property
    def checkpoints(self) -> Checkpoints:
        return checkpoints_of(self.scratch)

    def _checkpoint_summary(self) -> list[dict[str, Any]]:
        """Its checkpoints; a folder's files (by absolute path) with the run's checkpoint of
        the same turn."""
        out = [c.model_dump(exclude={"tree"}) for c in self.checkpoints.records]
        for at, view in self.folders.views.items():
            for record in checkpoints_of(view).records:
                for c in out:
                    if c["turn"] == record.turn:
                        c["files"] = [*c["files"], *(f"{at}/{p}" for p in record.files)]
        return out

    def summary(self) -> dict[str, Any]:
        """What ``driveros runs list/show --format json`` prints of it."""
        return {
            "run_id": self.run_id,
            "task": self.task,
            "workspace": str(self.workspace),
            "held_at": self.held_at,
            "turns": self.turns,
            "outcome": self.outcome,
            "answer": self.answer,
            "parent": self.parent,
            "checkpoints": self._checkpoint_summary(),
            "folders": [str(at) for at in self.folders.views],
        }

    async def aclose(self) -> None:
        """Let go of it: it stays held (unless discarded)."""
        await self.scratch.aclose()
        await self.folders.aclose()

    async def discard(self) -> None:
        """Remove it for good (its folders' views too)."""
        await self.scratch.discard()
        await self.folders.discard()


async def hold_run(
    scratch: ScratchWorkspace,
    *,
    run_id: str,
    task: str,
    history: Sequence[Message],
    turns: int,
    answer: str = "",
    outcome: str = "answered",
    parent: str | None = None,
) -> None:
    """Keep ``scratch`` (a review run's copy) with its checkpoints and conversation (its
    writable added folders' views: :func:`hold_folders`)."""
    manifest: dict[str, Any] = {
        "kind": KIND,
        "run_id": run_id,
        "task": task,
        "turns": turns,
        "answer": answer,
        "outcome": outcome,
        "parent": parent,
        "held_at": time.time(),
        "history": _HISTORY.dump_python(list(history), mode="json"),
        **checkpoints_of(scratch).manifest_entry(),
    }
    await scratch.keep(manifest)


async def hold_folders(folders: FolderViews | None, *, run_id: str) -> None:
    """Keep the views of held run ``run_id``'s writable added folders, each with its own
    checkpoints (again after a revert: the manifest is replaced)."""
    for at, view in (folders or FolderViews()).views.items():
        entry = checkpoints_of(view).manifest_entry()
        await view.keep({"kind": KIND, FOLDER_OF: run_id, "folder": str(at), **entry})


def _held(scratch: ScratchWorkspace, manifest: dict[str, Any]) -> HeldRun:
    checkpoints_of(scratch, manifest)
    return HeldRun(
        run_id=str(manifest.get("run_id", "")),
        task=str(manifest.get("task", "")),
        workspace=scratch.workspace,
        held_at=float(manifest.get("held_at") or 0.0),
        turns=int(manifest.get("turns") or 0),
        answer=str(manifest.get("answer") or ""),
        outcome=str(manifest.get("outcome") or ""),
        parent=manifest.get("parent"),
        scratch=scratch,
        history=_HISTORY.validate_python(manifest.get("history") or []),
    )


def is_held_run(manifest: Mapping[str, Any]) -> bool:
    """Whether a kept copy's manifest is a held run's (not an editor's kept proposal, nor
    the view of a held run's added folder)."""
    return manifest.get("kind") == KIND and FOLDER_OF not in manifest


async def _held_folders(run_ids: Sequence[str]) -> dict[str, FolderViews]:
    """The kept views of the held runs' added folders, reopened, by run id."""

    def wanted(manifest: Mapping[str, Any]) -> bool:
        return manifest.get(FOLDER_OF) in run_ids

    found: dict[str, FolderViews] = {}
    for kept in await reopen_kept_where(wanted):
        checkpoints_of(kept.scratch, kept.manifest)
        views = found.setdefault(str(kept.manifest[FOLDER_OF]), FolderViews())
        views.views[Path(str(kept.manifest.get("folder")))] = kept.scratch
    return found


async def held_runs(workspace: Path | None = None) -> list[HeldRun]:
    """Every held run (of ``workspace`` when given), oldest first, reopened by this process.
    Other kept copies (an editor's kept proposals) are not touched."""
    found: list[HeldRun] = []
    for kept in await reopen_kept_where(is_held_run, workspace=workspace):
        found.append(_held(kept.scratch, kept.manifest))
    folders = await _held_folders([r.run_id for r in found]) if found else {}
    for held in found:
        held.folders = folders.pop(held.run_id, held.folders)
    for orphans in folders.values():  # none expected: only these runs' views were asked for
        await orphans.aclose()
    return sorted(found, key=lambda r: r.held_at)


@contextlib.asynccontextmanager
async def open_held(run_id: str | None, workspace: Path | None = None) -> AsyncIterator[HeldRun]:
    """:func:`take_held`, closed (still held) on the way out."""
    chosen = await take_held(run_id, workspace)
    try:
        yield chosen
    finally:
        await chosen.aclose()


async def take_held(run_id: str | None, workspace: Path | None = None) -> HeldRun:
    """The held run ``run_id`` (None: ``workspace``'s most recent one), now owned by the
    caller (who closes it). A unique prefix of a run id names it. ConfigError when none
    matches."""
    runs = await held_runs(workspace)
    chosen: HeldRun | None = None
    try:
        if run_id is None:
            chosen = runs[-1] if runs else None
            if chosen is None:
                raise ConfigError(f"no held run for {workspace}: see `driveros runs list`")
        else:
            matches = [r for r in runs if r.run_id == run_id] or [
                r for r in runs if r.run_id.startswith(run_id)
            ]
            if len(matches) != 1:
                why = "no held run" if not matches else "more than one held run"
                raise ConfigError(f"{why} matches {run_id!r}: see `driveros runs list`")
            chosen = matches[0]
    finally:
        await asyncio.gather(*(r.aclose() for r in runs if r is not chosen))
    return chosen


def history_through(history: Sequence[Message], turns: int) -> list[Message]:
    """The conversation up to the end of turn ``turns`` (its assistant message and the tool
    results that answered it); the turns of a run are its assistant messages."""
    if turns <= 0:
        return []  # the new task starts the conversation afresh
    kept: list[Message] = []
    seen = 0
    for message in history:
        if message.role == "assistant":
            if seen == turns:
                break
            seen += 1
        elif message.role == "user" and seen == turns and kept:
            break
        kept.append(message)
    return kept


async def fork_held(held: HeldRun, through: int) -> tuple[ScratchWorkspace, list[Message], int]:
    """A new scratch copy of the held run's workspace holding its changes up to checkpoint
    ``through`` (0: none), with the conversation up to that checkpoint's turn and that
    turn's number. The held run is unchanged."""
    records = held.checkpoints.records
    turn = 0
    if through:
        cp = next((c for c in records if c.checkpoint == through), None)
        if cp is None:
            known = ", ".join(str(c.checkpoint) for c in records) or "none"
            raise ConfigError(f"run {held.run_id} has no checkpoint {through} ({known})")
        turn = cp.turn
    scratch = await ScratchWorkspace.create(held.workspace)
    try:
        await held.checkpoints.write_into(scratch.path, through=through)
    except BaseException:
        await scratch.aclose()
        raise
    return scratch, history_through(held.history, turn), turn
