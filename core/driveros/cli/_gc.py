"""``driveros gc``: remove what ended driveros processes left behind.

Scratch copies and their ``git worktree`` entries, the diagnostics feed's caches, sockets:
everything registered in the state directory by a process that is gone (and proposals kept
longer than ``driveros.state.KEPT_MAX_AGE_S``; ``driveros acp`` sessions past their
retention). A younger kept proposal no live process serves is only unmounted. Prints what
it removed; exit 0, or 1 when something could not be removed.
"""

from __future__ import annotations

import argparse
import json
import sys

from driveros.state import collect_garbage, state_dir


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="stdout: one line per removed item and a summary (text), or one JSON object",
    )


async def run(args: argparse.Namespace) -> int:
    report = await collect_garbage(state=state_dir())
    if args.format == "json":
        sys.stdout.write(json.dumps(report.model_dump(mode="json"), sort_keys=True) + "\n")
    else:
        for item in report.removed:
            what = ", ".join(item.paths) or "(nothing on disk)"
            repo = f" (worktree of {item.repo})" if item.repo else ""
            sys.stdout.write(f"removed {item.kind} of pid {item.owner_pid}: {what}{repo}\n")
        for point in report.unmounted:
            sys.stdout.write(f"unmounted {point} (a kept proposal's view; its changes stay)\n")
        for session in report.sessions:
            why = "unused too long" if session.reason == "expired" else "too many kept"
            sys.stdout.write(f"removed kept ACP session {session.id} ({why})\n")
        sys.stdout.write(f"{report.summary()} (state directory: {report.state_dir})\n")
    for err in report.errors:
        sys.stderr.write(f"driveros gc: {err}\n")
    return 1 if report.errors else 0
