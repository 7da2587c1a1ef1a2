"""The ``/checkpoints`` and ``/revert N`` session commands, answered without a model request
(docs/acp.md, "Checkpoints and follow-ups").

A prompt's run offers its edits when it ends (each written once allowed), so the session holds
the last prompt's proposal after it: its checkpoints and its private copy, open until the next
prompt or the end of the session (:class:`LastProposal`). ``/revert N`` takes that proposal
back to checkpoint N with the same core operation as the language server's
``driveros.agent.revert`` (``driveros.review.Checkpoints.revert``: the copy becomes what it was
at N and the later checkpoints are dropped), then rewinds what the dropped checkpoints wrote
into the user's files: a file of the proposal that still holds the run's version gets its
version at N back (removed if it had none); a file the user changed since, or one the proposal
left unchanged (the run never wrote it to the user's files), is left as it is and named.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import schema

from driveros._atomic import write_atomic
from driveros._unicode import printable
from driveros.agent import CheckpointInfo, Result
from driveros.review import ReviewError, checkpoints_of, path_problem, read_text

log = logging.getLogger(__name__)

#: The prompt texts that ask for them.
COMMAND = "/checkpoints"
REVERT = "/revert"
_REVERT = re.compile(r"/revert(?:\s+(?P<arg>.*))?", re.DOTALL)
USAGE = (
    "Usage: /revert N, where N is one of the last prompt's checkpoints (see /checkpoints); "
    "/revert 0 goes back to before its first."
)


def is_checkpoints_command(text: str) -> bool:
    return text.strip() == COMMAND


def session_commands() -> list[schema.AvailableCommand]:
    """``/checkpoints`` and ``/revert`` as ``available_commands_update`` lists them."""
    return [
        schema.AvailableCommand(
            name=COMMAND[1:],
            description="List the last prompt's checkpoints (one per turn that changed files)",
        ),
        schema.AvailableCommand(
            name=REVERT[1:],
            description="Drop the last prompt's checkpoints after N and undo what they wrote",
            input=schema.AvailableCommandInput(
                root=schema.UnstructuredCommandInput(hint="checkpoint number")
            ),
        ),
    ]


def checkpoints_text(checkpoints: Sequence[CheckpointInfo]) -> str:
    """One line per checkpoint of the last prompt's run: number, turn, the files it changed."""
    if not checkpoints:
        return "No checkpoints: the last prompt changed no file (or no prompt ran yet)."
    lines = [f"Checkpoints of the last prompt ({len(checkpoints)}):"]
    for c in checkpoints:
        files = ", ".join(printable(f) for f in c.files)
        lines.append(f"{c.checkpoint}. turn {c.turn}: {files}")
    return "\n".join(lines)


@dataclass
class Rewound:
    """What ``/revert`` did to the user's files."""

    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    #: path -> why it was left as it is.
    kept: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ClientFiles:
    """The client's side of the user's files (ACP ``fs``), each None where it cannot: read
    a file's text (the editor's buffer; None: the disk's counts), write a file's text."""

    read: Callable[[str], Awaitable[str | None]] | None = None
    write: Callable[[str, str], Awaitable[None]] | None = None


def _problem(workspace: Path, rel: str, remove: bool) -> str | None:
    """Why ``rel`` is not rewound: the review planner's path rules, and a symbolic link at
    the file itself (an editor's ``fs/write_text_file`` would write through it)."""
    problem = path_problem(workspace, rel, remove=remove)
    if problem is None and (workspace / rel).is_symlink():
        return "a symbolic link in the workspace; driveros never writes through one"
    return problem


def _write(workspace: Path, rel: str, text: str | None) -> None:
    """Write ``text`` at ``rel`` (None: remove it), keeping an existing file's mode."""
    target = workspace / rel
    if text is None:
        target.unlink()
        return
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
    write_atomic(target, text.encode("utf-8"), perms=mode, root=workspace)


async def _rewind(
    workspace: Path,
    final: dict[str, str | None],
    at: dict[str, str | None],
    files: ClientFiles,
    offered: set[str],
) -> Rewound:
    """Give each file of the proposal (``offered``) that still holds the run's ``final``
    version its version ``at`` the checkpoint: read and written through the client where it
    can (as edits are), else on disk; a removal is always on disk."""
    done = Rewound()
    for rel in sorted(at):
        want = at[rel]
        problem = await asyncio.to_thread(_problem, workspace, rel, want is None)
        if problem is not None:
            done.kept[rel] = problem
            continue
        path = workspace / rel
        now: str | None = None
        if files.read is not None:
            try:
                now = await files.read(str(path))
            except Exception as exc:  # the client failed the read: the disk counts
                log.info("fs/read_text_file %s failed: %s", rel, exc)
        try:
            if now is None:
                now = await asyncio.to_thread(read_text, path)
        except (OSError, UnicodeDecodeError) as exc:
            done.kept[rel] = f"cannot read it: {exc}"
            continue
        if now == want:
            continue  # never written (rejected), or already back
        if rel not in offered:  # its final version is the user's own: nothing to undo
            done.kept[rel] = "not in the run's proposal: never written to your files"
            continue
        if rel not in final or now != final[rel]:
            done.kept[rel] = "changed since the run wrote it"
            continue
        try:
            if want is not None and files.write is not None:
                await files.write(str(path), want)
            else:
                await asyncio.to_thread(_write, workspace, rel, want)
        except FileNotFoundError:  # only in an unsaved buffer of the editor's
            done.kept[rel] = "not on disk: an unsaved buffer in the editor is yours to close"
            continue
        except Exception as exc:  # a refused write leaves the file as it is
            done.kept[rel] = f"cannot write it: {exc}"
            continue
        (done.restored if want is not None else done.removed).append(rel)
    return done


class LastProposal:
    """The last prompt's proposal: its checkpoints and its private copy (held open)."""

    def __init__(self) -> None:
        self.checkpoints: list[CheckpointInfo] = []
        self._scratch: Any = None
        self._workspace: Path | None = None

    async def hold(self, scratch: Any, result: Result, workspace: Path) -> None:
        """A prompt's run ended with ``result``: its proposal replaces this one (whose copy is
        closed); a canceled run's is not held."""
        await self.aclose()
        self.checkpoints = list(result.checkpoints) if result.outcome != "canceled" else []
        if scratch is not None and self.checkpoints:
            self._scratch, self._workspace = scratch, workspace
        elif scratch is not None:
            await scratch.aclose()

    async def aclose(self) -> None:
        """Close the held copy; nothing is left to list or revert."""
        self.checkpoints = []
        scratch, self._scratch = self._scratch, None
        if scratch is not None:
            await scratch.aclose()

    async def answer(self, text: str, files: ClientFiles | None = None) -> str | None:
        """The reply to a session command, or None when ``text`` is none."""
        if is_checkpoints_command(text):
            return checkpoints_text(self.checkpoints)
        match = _REVERT.fullmatch(text.strip())
        if match is None:
            return None
        arg = (match.group("arg") or "").strip()
        if not (arg.isascii() and arg.isdigit()) or len(arg) > 9:  # never "²" or "٣"
            return USAGE
        return await self._revert(int(arg), files or ClientFiles())

    async def _revert(self, to: int, files: ClientFiles) -> str:
        scratch, workspace = self._scratch, self._workspace
        if scratch is None or workspace is None:
            return "Nothing to revert: the last prompt changed no file (or no prompt ran yet)."
        known = [c.checkpoint for c in self.checkpoints]
        if to != 0 and to not in known:
            listed = ", ".join(str(n) for n in known)
            return f"No checkpoint {to} in the last prompt (checkpoints: {listed}). {USAGE}"
        later = sorted({f for c in self.checkpoints if c.checkpoint > to for f in c.files})
        if not later:
            return f"Nothing after checkpoint {to}.\n" + checkpoints_text(self.checkpoints)
        view = Path(scratch.path)

        def read_all(paths: Sequence[str]) -> dict[str, str | None]:
            out: dict[str, str | None] = {}
            for rel in paths:
                try:
                    out[rel] = read_text(view / rel)
                except (OSError, UnicodeDecodeError):
                    pass  # not text: never rewound
            return out

        final = await asyncio.to_thread(read_all, later)
        offered = {p for c in await scratch.changes() for p in c.paths}
        try:
            back = await checkpoints_of(scratch).revert(to)
        except ReviewError as exc:
            return f"{exc}. {USAGE}"
        self.checkpoints = [c for c in self.checkpoints if c.checkpoint <= to]
        at = await asyncio.to_thread(read_all, back)
        done = await _rewind(workspace, final, at, files, offered)
        return _reverted_text(to, done) + "\n" + checkpoints_text(self.checkpoints)


def _reverted_text(to: int, done: Rewound) -> str:
    lines = [f"Reverted to checkpoint {to}."]
    if done.restored:
        lines.append("Restored: " + ", ".join(printable(p) for p in done.restored))
    if done.removed:
        lines.append("Removed: " + ", ".join(printable(p) for p in done.removed))
    for rel, why in sorted(done.kept.items()):
        lines.append(f"Left as it is: {printable(rel)} ({why})")
    return "\n".join(lines)
