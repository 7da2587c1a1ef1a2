"""The end of a ``--review`` run: show the diff (stderr) and apply ``--review-action``."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence

from driveros._errors import ConfigError, DriverosError
from driveros._plural import files
from driveros._unicode import terminal_safe
from driveros.config import Environment
from driveros.runs import RunReport

_TTY = "/dev/tty"


def review_prompt_check(tty_path: str = _TTY) -> None:
    """Fail fast when ``--review-action prompt`` could not ask anyone."""
    try:
        os.close(os.open(tty_path, os.O_RDWR | os.O_NOCTTY))
    except OSError as exc:
        raise ConfigError(
            "--review-action prompt needs a terminal (/dev/tty); "
            "use --review-action commit, keep or discard"
        ) from exc


def _wake(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


async def _ask(question: str, tty_path: str = _TTY) -> str:
    """One answer line from the terminal; waiting is cancellable (Ctrl-C works)."""
    fd = os.open(tty_path, os.O_RDWR | os.O_NOCTTY)
    loop = asyncio.get_running_loop()
    try:
        os.write(fd, question.encode())
        os.set_blocking(fd, False)
        buf = b""
        while b"\n" not in buf and len(buf) < 1024:
            ready: asyncio.Future[None] = loop.create_future()
            loop.add_reader(fd, _wake, ready)
            try:
                await ready
            finally:
                loop.remove_reader(fd)
            try:
                chunk = os.read(fd, 256)
            except BlockingIOError:
                continue
            if not chunk:
                break
            buf += chunk
        return buf.split(b"\n", 1)[0].decode(errors="replace").strip().lower()
    finally:
        os.close(fd)


def commit_message(task: str, answer: str, run_id: str) -> str:
    subject = " ".join(task.split())
    if len(subject) > 64:
        subject = subject[:63].rstrip() + "…"
    body = answer.strip()
    return (
        f"driveros: {subject}\n\n{body}\n\nRun-Id: {run_id}\n"
        if body
        else (f"driveros: {subject}\n\nRun-Id: {run_id}\n")
    )


async def _hold(report: RunReport, *, task: str, prior_turns: int, parent: str | None) -> None:
    from driveros.review import checkpoints_of, render_changes
    from driveros.runs import hold_folders, hold_run

    scratch = report.scratch
    assert scratch is not None
    if report.changes:
        sys.stderr.write(render_changes(report.changes, color=sys.stderr.isatty()))
    result = report.result
    await hold_run(
        scratch,
        run_id=result.run_id,
        task=task,
        history=report.history,
        turns=prior_turns + result.turns,
        answer=result.answer,
        outcome=result.outcome,
        parent=parent,
    )
    await hold_folders(report.folders, run_id=result.run_id)
    count = len(checkpoints_of(scratch).records)
    sys.stderr.write(
        f"driveros: review: held as run {result.run_id} ({count} checkpoints, "
        f"{files(len(report.changes))}); see `driveros runs show {result.run_id}`\n"
    )


async def finish_review(
    report: RunReport,
    *,
    task: str,
    action: str,
    prior_turns: int = 0,
    parent: str | None = None,
) -> str | None:
    """Show the proposed changes and carry out ``action`` (prompt|commit|discard|keep|hold;
    ``hold`` keeps the run for ``driveros runs``: ``prior_turns`` are the turns of the run it
    resumed, ``parent`` the run it was forked from).

    A canceled run, or one that did not end with an answer, is discarded unless the user is
    asked (``prompt``). The scratch copy is always closed. Returns why the action failed (a
    conflict with your own edits, not a repository, ...; the diff stays on stderr and nothing
    was written), or None when it was carried out.
    """
    scratch = report.scratch
    assert scratch is not None
    result = report.result
    from driveros.review import FolderViews, apply_together, commit_together

    folders = report.folders or FolderViews()
    try:
        from driveros.review import render_changes

        changes = report.changes
        if action == "hold" and result.outcome != "canceled":
            await _hold(report, task=task, prior_turns=prior_turns, parent=parent)
            return None
        if not changes:
            sys.stderr.write("driveros: review: no changes\n")
            return None
        sys.stderr.write(render_changes(changes, color=sys.stderr.isatty()))
        answered = result.outcome in ("answered", "unverified")
        if result.outcome == "canceled" or (not answered and action != "prompt"):
            sys.stderr.write(f"driveros: review: {result.outcome}; changes discarded\n")
            await scratch.discard()
            await folders.discard()
            return None
        selected: list[str] | None = None
        if action == "prompt":
            reply = await _ask(
                "driveros: [k]eep (apply unstaged), [c]ommit, [s]elect files, or [d]iscard? "
            )
            action = {
                "k": "keep",
                "keep": "keep",
                "c": "commit",
                "commit": "commit",
                "s": "select",
                "select": "select",
            }.get(reply, "discard")
        if action == "select":
            selected = []
            for change in changes:
                if (await _ask(f"driveros: apply {change.path}? [y/N] ")) in ("y", "yes"):
                    selected.append(change.path)
            action = "keep" if selected else "discard"
        if action == "commit" and folders:
            message = commit_message(task, result.answer, result.run_id)
            for made in await commit_together(scratch, folders, message):
                count = files(len(made.applied))
                sys.stderr.write(f"driveros: review: committed {made.commit} ({count})\n")
        elif action == "commit":
            applied = await scratch.commit(commit_message(task, result.answer, result.run_id))
            count = files(len(applied.applied))
            sys.stderr.write(f"driveros: review: committed {applied.commit} ({count})\n")
        elif action == "keep":
            applied = await apply_together(scratch, folders, selected)
            sys.stderr.write(f"driveros: review: applied {files(len(applied.applied))}\n")
        else:
            await scratch.discard()
            await folders.discard()
            sys.stderr.write("driveros: review: changes discarded\n")
            return None
        if scratch.kept and selected is None:  # a resumed held run, now applied: it ends
            await scratch.discard()
            await folders.discard()
        return None
    except (DriverosError, OSError) as exc:
        error = f"review: {action} failed{_what_was_written(exc)}"
        sys.stderr.write(f"driveros: {error}\n")
        return error
    finally:
        await scratch.aclose()
        await folders.aclose()


def _what_was_written(exc: BaseException) -> str:
    """The failure's text led by what it left in the workspace: "nothing was written" only
    when the error says no file was (review errors carry the files left written)."""
    written = exc.context.get("written") if isinstance(exc, DriverosError) else None
    said = str(exc).removesuffix("; nothing was written")
    if written:
        return f", {files(len(written))} written ({', '.join(written)}): {said}"
    return f", nothing was written: {said}"


async def council_gate(
    report: RunReport, *, task: str, env: Environment, author: Sequence[str]
) -> str | None:
    """``--council``: other providers review the diff first; the verdict goes to stderr.

    Returns ``approve``/``revise``/``reject``, or None when the council could not decide (an
    infrastructure error is reported as such, never as a verdict)."""
    from driveros.council import CouncilError, review_proposal
    from driveros.review import combined_patch

    try:
        verdict = await review_proposal(
            combined_patch(report.changes), env=env, task=task, exclude=author
        )
    except (CouncilError, DriverosError) as exc:
        sys.stderr.write(f"council: no verdict ({exc})\n")
        return None
    shown = f"council: {verdict.verdict} (referee {verdict.referee}): {verdict.summary}\n"
    shown += "".join(f"  - [{issue.severity}] {issue.description}\n" for issue in verdict.issues)
    sys.stderr.write(terminal_safe(shown))  # the models' text: escapes shown, never acted on
    return verdict.verdict
