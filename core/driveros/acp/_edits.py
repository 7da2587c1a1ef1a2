"""After a prompt's run: every proposed file is shown as a ``diff`` and reaches the user's
files only after ``session/request_permission`` allows it.

An allowed modify/create goes through the client (``fs/write_text_file``) when it can write,
after the review planner (driveros.review.plan_file) has checked it against the text the user
has now (the client's buffer when it can read, else the disk): the same conflict rules as
every other writer. Deletions and renames, and every edit when the client cannot write, go
through the review layer onto disk (``ScratchWorkspace.apply``). A rejected edit writes
nothing; what the user rejected and what could not be written is returned as feedback for
the model's next prompt.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from acp import schema

from driveros._errors import DriverosError
from driveros.acp._permission import OPTIONS, Verdict, verdict_of
from driveros.acp._plan import RunPlan
from driveros.acp._updates import Update, text_block
from driveros.approval import display_command
from driveros.review import FileChange, ScratchWorkspace, plan_file, read_text

log = logging.getLogger(__name__)

ReadText = Callable[[str], Awaitable[str | None]]
WriteText = Callable[[str, str], Awaitable[None]]
Ask = Callable[
    [schema.ToolCallUpdate, list[schema.PermissionOption]],
    Awaitable[schema.RequestPermissionResponse],
]


@dataclass
class EditGate:
    """How one session delivers edits: the client's callbacks and what it can do."""

    emit: Callable[[Update], Awaitable[None]]
    ask: Ask
    #: Reads an absolute path through the client (None: the client cannot read).
    read: ReadText | None
    #: Writes an absolute path through the client (None: the client cannot write).
    write: WriteText | None
    #: ``allow_always``/``reject_always`` answered earlier in this session.
    always: Literal["allow", "reject"] | None = None
    #: The prompt's plan: one review step per change (None: no plan updates).
    plan: RunPlan | None = None
    #: Told the outcome of each change's review (its paths, written, a note): the run's edit
    #: calls of those files get their final status (``UpdateStream.settle_edits``).
    settled: Callable[[tuple[str, ...], bool, str], Awaitable[None]] | None = None


def _kind(change: FileChange) -> schema.ToolKind:
    return {"delete": "delete", "rename": "move"}.get(change.action, "edit")  # type: ignore[return-value]


def _title(change: FileChange) -> str:
    """The change as a person reads it: file names the model chose are escaped
    (:func:`driveros.approval.display_command`), so none can pass for another."""
    path = display_command(change.path)
    match change.action:
        case "create":
            return f"Create {path}"
        case "delete":
            return f"Delete {path}"
        case "rename":
            return f"Rename {display_command(change.old_path or '')} → {path}"
        case _:
            return f"Edit {path}"


def _content(workspace: Path, change: FileChange) -> list[schema.FileEditToolCallContent]:
    if change.binary or (change.action != "delete" and change.after is None):
        return []
    return [
        schema.FileEditToolCallContent(
            type="diff",
            path=str(workspace / change.path),
            old_text=change.before,
            new_text=change.after if change.after is not None else "",
        )
    ]


async def _current_texts(
    gate: EditGate, workspace: Path, rels: tuple[str, ...]
) -> dict[str, str | None]:
    """The text the user has now for each path: the client's buffer, else the disk."""
    texts: dict[str, str | None] = {}
    for rel in rels:
        text: str | None = None
        got = False
        if gate.read is not None and not (workspace / rel).is_symlink():
            try:
                text = await gate.read(str(workspace / rel))
                got = text is not None
            except Exception as exc:  # the client's answer is foreign input: fall back to disk
                log.info("fs/read_text_file %s failed (%s); reading the disk", rel, exc)
        if not got:
            try:
                text = await asyncio.to_thread(read_text, workspace / rel)
            except (OSError, UnicodeDecodeError):
                text = None
        texts[rel] = text
    return texts


async def _write(gate: EditGate, scratch: ScratchWorkspace, change: FileChange) -> str | None:
    """Write one allowed change; None when written, else why not."""
    workspace = scratch.workspace
    if gate.write is not None and change.action in ("create", "modify"):
        texts = await _current_texts(gate, workspace, change.paths)
        plan = await asyncio.to_thread(
            plan_file, workspace, change, current=lambda rel: texts.get(rel)
        )
        if plan.conflict is not None:
            return plan.conflict
        assert plan.target is not None
        try:
            await gate.write(str(workspace / plan.path), plan.target)
        except Exception as exc:  # the client refused or failed: nothing else is tried
            return f"the editor could not write the file ({exc})"
        return None
    try:
        await scratch.apply([change.path])
    except DriverosError as exc:
        return str(exc)
    return None


async def deliver_edits(
    gate: EditGate, scratch: ScratchWorkspace, changes: list[FileChange]
) -> list[str]:
    """Show, ask about and write each change; the feedback for the model (empty: all written).

    Raises CancelledError when the prompt is cancelled (an unanswered request counts as
    cancelled: the rest is not written).
    """
    feedback: list[str] = []
    workspace = scratch.workspace
    for change in changes:
        call_id = f"edit-{uuid.uuid4().hex[:12]}"
        content = _content(workspace, change)
        await gate.emit(
            schema.ToolCallStart(
                session_update="tool_call",
                tool_call_id=call_id,
                title=_title(change),
                kind=_kind(change),
                status="pending",
                content=list(content) or None,
                locations=[schema.ToolCallLocation(path=str(workspace / p)) for p in change.paths],
                raw_input={"path": change.path, "action": change.action, "diff": change.diff},
            )
        )
        if gate.plan is not None:
            await gate.plan.reviewing(change.path)
        verdict: Verdict
        if gate.always == "allow":
            verdict = "allow_once"
        elif gate.always == "reject":
            verdict = "reject_once"
        else:
            try:
                response = await gate.ask(
                    schema.ToolCallUpdate(
                        tool_call_id=call_id,
                        title=_title(change),
                        kind=_kind(change),
                        status="pending",
                        content=list(content) or None,
                        locations=[
                            schema.ToolCallLocation(path=str(workspace / p)) for p in change.paths
                        ],
                    ),
                    list(OPTIONS),
                )
                verdict = verdict_of(response)
            except Exception as exc:  # the client failed to answer: nothing is written
                log.warning("session/request_permission failed: %s", exc)
                verdict = "reject_once"
        if verdict == "cancelled":
            await _finish(gate, call_id, ok=False, note="cancelled: not written")
            await _planned(gate, change, "cancelled, not written")
            await _settled(gate, change, False, "cancelled: not written")
            raise asyncio.CancelledError
        if verdict == "allow_always":
            gate.always = "allow"
        elif verdict == "reject_always":
            gate.always = "reject"
        if verdict in ("allow_once", "allow_always"):
            problem = await _write(gate, scratch, change)
            if problem is None:
                await _finish(gate, call_id, ok=True, note=f"{change.path}: written")
                await _planned(gate, change, "written")
                await _settled(gate, change, True, "written")
            else:
                await _finish(gate, call_id, ok=False, note=f"not written: {problem}")
                await _planned(gate, change, "not written")
                await _settled(gate, change, False, f"not written: {problem}")
                feedback.append(f"- {change.path}: could not be written ({problem})")
        else:
            await _finish(gate, call_id, ok=False, note="rejected by the user: not written")
            await _planned(gate, change, "rejected")
            await _settled(gate, change, False, "rejected by the user: not written")
            feedback.append(f"- {change.path}: the user rejected this change; it was not written")
    return feedback


async def _settled(gate: EditGate, change: FileChange, written: bool, note: str) -> None:
    if gate.settled is not None:
        await gate.settled(change.paths, written, note)


async def _planned(gate: EditGate, change: FileChange, outcome: str) -> None:
    if gate.plan is not None:
        await gate.plan.reviewed(change.path, outcome)


def proposed(changes: list[FileChange]) -> list[tuple[str, str]]:
    """(path, title) of each change, for the plan's review steps."""
    return [(change.path, _title(change)) for change in changes]


async def _finish(gate: EditGate, call_id: str, *, ok: bool, note: str) -> None:
    await gate.emit(
        schema.ToolCallProgress(
            session_update="tool_call_update",
            tool_call_id=call_id,
            status="completed" if ok else "failed",
            raw_output={"written": ok, "detail": note},
        )
    )


def feedback_prompt(lines: list[str]) -> str:
    """The note prepended to the next prompt when edits were rejected or failed."""
    if not lines:
        return ""
    return (
        "Your previous proposal was reviewed. These changes were NOT applied:\n"
        + "\n".join(lines)
        + "\nThe user's files do not contain them. Take this into account.\n\n"
    )


__all__ = ["EditGate", "deliver_edits", "feedback_prompt", "proposed", "text_block"]
