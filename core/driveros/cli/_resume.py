"""``driveros agent --resume RUN [--from N]`` and ``--continue``: a new task on a held run.

A resumed run continues the held run's conversation and its scratch copy at its last
checkpoint (its checkpoints go on numbering); ``--from N`` forks a new run from checkpoint N
(a new scratch copy with the changes up to N, the conversation up to N's turn), leaving the
original as it was; ``--continue`` resumes the workspace's most recent held run. A resumed or
forked run is a review run, held again at its end unless ``--review-action`` says otherwise.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from driveros.cli._parser import UsageError
from driveros.llm import Message
from driveros.runs import AddedDir, RunSpec


@dataclass
class Resumed:
    """What a resumed or forked run starts from."""

    #: Arguments for :func:`driveros.runs.execute_run` (``history``, ``scratch``).
    run: dict[str, Any] = field(default_factory=dict)
    #: The turns before this run's (a resumed run's checkpoints continue their numbering).
    prior_turns: int = 0
    #: The run a fork came from, as ``RUN@N``.
    parent: str | None = None


def add_resume_flags(add: Callable[..., Any]) -> None:
    add("--resume", metavar="RUN", help="continue a held run (driveros runs list) with --task")
    add(
        "--from",
        dest="resume_from",
        type=int,
        metavar="N",
        help="with --resume: fork a new run from checkpoint N (the original is unchanged)",
    )
    add(
        "--continue",
        dest="resume_last",
        action="store_true",
        help="continue this workspace's most recent held run with --task",
    )


def prepare_resume(args: argparse.Namespace) -> None:
    """A resumed run is a review run, held again unless ``--review-action`` is given."""
    if args.resume_from is not None and args.resume is None:
        raise UsageError("driveros agent: error: --from needs --resume RUN")
    if args.resume_from is not None and args.resume_from < 0:
        raise UsageError("driveros agent: error: --from takes a checkpoint number (0 or more)")
    if args.resume is not None and args.resume_last:
        raise UsageError("driveros agent: error: --resume and --continue cannot be combined")
    if args.resume is None and not args.resume_last:
        return
    args.review = True
    if args.review_action is None:
        args.review_action = "hold"


async def resume(args: argparse.Namespace, spec: RunSpec) -> tuple[RunSpec, Resumed]:
    """The spec (on the held run's workspace) and what the run starts from."""
    if args.resume is None and not args.resume_last:
        return spec, Resumed()
    from driveros.review import checkpoints_of
    from driveros.runs import fork_held, take_held

    workspace = None if args.resume is not None else spec.workspace
    held = await take_held(args.resume, workspace)
    spec = spec.model_copy(update={"workspace": held.workspace, "run_id": held.run_id})
    # its added folders stay writable, on their views (docs/cli.md, "More than one folder")
    added = [a for a in spec.add_dirs if a.path not in held.folders.views]
    added += [AddedDir(path=at, writable=True) for at in held.folders.views]
    spec = spec.model_copy(update={"add_dirs": added})
    if args.resume_from is None:
        for cps in [held.scratch, *held.folders.views.values()]:
            checkpoints_of(cps).turn_offset = held.turns
        history: list[Message] = held.history
        return spec, Resumed(
            run={"history": history, "scratch": held.scratch, "folders": held.folders},
            prior_turns=held.turns,
            parent=held.parent,
        )
    spec = spec.model_copy(update={"run_id": None})
    try:
        scratch, history, turn = await fork_held(held, args.resume_from)
        try:
            folders = await held.folders.fork(turn)
        except BaseException:
            await scratch.aclose()
            raise
    finally:
        await held.aclose()
    for cps in [scratch, *folders.views.values()]:
        checkpoints_of(cps).turn_offset = turn
    return spec, Resumed(
        run={"history": history, "scratch": scratch, "folders": folders},
        prior_turns=turn,
        parent=f"{held.run_id}@{args.resume_from}",
    )
