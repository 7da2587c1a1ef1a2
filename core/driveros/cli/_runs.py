"""``driveros runs``: the runs kept for later (``driveros agent --review --review-action hold``).

    driveros runs list [--workspace DIR] [--format json]
    driveros runs show RUN [--format json]        its checkpoints: turn, tool calls, files
    driveros runs diff RUN [--through N | --turn N]
    driveros runs apply RUN [--through N] [PATH…]
    driveros runs revert RUN --to N               drop the checkpoints after N from the run
    driveros runs discard RUN

RUN is a run id (or a unique prefix of one). Nothing reaches the user's files before
``apply``, which checks and writes exactly as ``--review-action keep`` does (docs/review.md,
"Conflicts"). stdout carries the data; exit 1 on a usage error, a conflict or an unknown run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from driveros._errors import DriverosError
from driveros._plural import files
from driveros._unicode import terminal_safe
from driveros.cli._parser import UsageError


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("expected a checkpoint number (0 or more)")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="runs_command", metavar="ACTION", required=True)
    fmt = {"choices": ("text", "json"), "default": "text", "help": "output format"}
    p = sub.add_parser("list", help="the held runs, oldest first")
    p.add_argument("--workspace", type=Path, help="only this workspace's runs")
    p.add_argument("--format", **fmt)  # type: ignore[arg-type]
    p = sub.add_parser("show", help="a run's checkpoints: turn, tool calls and files")
    p.add_argument("run")
    p.add_argument("--format", **fmt)  # type: ignore[arg-type]
    p = sub.add_parser("diff", help="the run's diff (up to checkpoint N, or of one turn)")
    p.add_argument("run")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--through", type=_non_negative, metavar="N")
    which.add_argument("--turn", type=int, metavar="N")
    p = sub.add_parser("apply", help="write the run's changes (up to checkpoint N)")
    p.add_argument("--through", type=_non_negative, metavar="N")
    p.add_argument("run")
    # argparse cannot take PATHs after an option that follows RUN: they are read here
    p.add_argument("paths", nargs=argparse.REMAINDER, metavar="[--through N] PATH")
    p = sub.add_parser("revert", help="drop the checkpoints after N from the run")
    p.add_argument("run")
    p.add_argument("--to", type=_non_negative, metavar="N", required=True)
    p = sub.add_parser("discard", help="remove the run for good")
    p.add_argument("run")


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _line(summary: dict[str, Any]) -> str:
    cps = summary["checkpoints"]
    changed = sorted({f for c in cps for f in c["files"]})
    task = terminal_safe(summary["task"].splitlines()[0] if summary["task"] else "")
    return (
        f"{summary['run_id']}  {len(cps)} checkpoints  {files(len(changed))}  "
        f"{terminal_safe(summary['workspace'])}  {task}\n"
    )


async def run(args: argparse.Namespace) -> int:
    try:
        return await _run(args)
    except DriverosError as exc:
        sys.stderr.write(f"driveros runs: {terminal_safe(str(exc))}\n")
        return 1


async def _run(args: argparse.Namespace) -> int:
    from driveros.review import apply_checkpoints, render_changes
    from driveros.runs import held_runs, open_held

    action = args.runs_command
    if action == "list":
        where = args.workspace.expanduser().resolve() if args.workspace else None
        runs = await held_runs(where)
        summaries = [r.summary() for r in runs]
        for r in runs:
            await r.aclose()
        if args.format == "json":
            _write(json.dumps(summaries, indent=2) + "\n")
        else:
            _write("".join(_line(s) for s in summaries))
        return 0
    async with open_held(args.run) as held:
        cps = held.checkpoints
        if action == "show":
            summary = held.summary()
            if args.format == "json":
                _write(json.dumps(summary, indent=2) + "\n")
                return 0
            _write(_line(summary))
            for c in summary["checkpoints"]:
                tools = ", ".join(c["tools"]) or "-"
                _write(f"  checkpoint {c['checkpoint']}  turn {c['turn']}  tools: {tools}\n")
                _write("".join(f"    {terminal_safe(f)}\n" for f in c["files"]))
            return 0
        last = cps.records[-1].checkpoint if cps.records else 0
        if action == "diff":
            changes = await cps.changes(through=args.through, turn=args.turn)
            if held.folders:  # a folder's checkpoints go by the run's turns
                if args.turn is not None:
                    changes += await held.folders.changes_at(args.turn, only=True)
                else:
                    turn = cps.turn_of(last if args.through is None else args.through)
                    changes += await held.folders.changes_at(turn)
            _write("".join(c.diff for c in changes))
            return 0
        if action == "apply":
            _through_from_paths(args)
            through = last if args.through is None else args.through
            shown = await cps.changes(through=through)
            shown += await held.folders.changes_at(cps.turn_of(through))
            sys.stderr.write(render_changes(shown, diff=False))
            result = await apply_checkpoints(
                cps, held.folders, through=through, paths=args.paths or None
            )
            sys.stderr.write(f"driveros: runs: applied {files(len(result.applied))}\n")
            if through >= last and not args.paths:
                await held.discard()  # all of it is in the workspace now
            return 0
        if action == "revert":
            back = await cps.revert(args.to)
            back += await held.folders.revert_to(cps.turn_of(args.to))
            await _hold_again(held)
            sys.stderr.write(
                f"driveros: runs: reverted {files(len(back))} to checkpoint {args.to}\n"
            )
            return 0
        await held.discard()
        sys.stderr.write(f"driveros: runs: discarded {held.run_id}\n")
        return 0


def _through_from_paths(args: argparse.Namespace) -> None:
    """``apply RUN --through N PATH…``: the option among the paths, taken out of them."""
    paths: list[str] = []
    rest = list(args.paths)
    while rest:
        item = rest.pop(0)
        if item == "--through" or item.startswith("--through="):
            value = item.partition("=")[2] if "=" in item else (rest.pop(0) if rest else "")
            try:
                args.through = _non_negative(value)
            except (ValueError, argparse.ArgumentTypeError) as exc:
                raise UsageError(f"driveros runs apply: error: --through: {value!r}") from exc
        elif item.startswith("-") and item != "-":
            raise UsageError(f"driveros runs apply: error: unrecognized arguments: {item}")
        else:
            paths.append(item)
    args.paths = paths


async def _hold_again(held: Any) -> None:
    """Record the run's new checkpoint list (the rest of its manifest unchanged)."""
    from driveros.runs import hold_folders, hold_run

    await hold_run(
        held.scratch,
        run_id=held.run_id,
        task=held.task,
        history=held.history,
        turns=held.turns,
        answer=held.answer,
        outcome=held.outcome,
        parent=held.parent,
    )
    await hold_folders(held.folders, run_id=held.run_id)
