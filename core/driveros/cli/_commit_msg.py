"""``driveros commit-msg``: a conventional commit message for the staged diff (stdout).

driveros commit-msg                  # print a message for what is staged
driveros commit-msg --install-hook   # prepare-commit-msg + post-commit hooks
driveros commit-msg --hook FILE      # (the hook) write the message into FILE
driveros commit-msg --reconcile      # (the hook) verdict from what was committed
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from driveros._errors import DriverosError
from driveros.cli._options import add_provider
from driveros.cli._parser import ArgumentParser


def configure(parser: ArgumentParser) -> None:
    add_provider(parser)
    parser.add_argument("--corpus", type=Path, help="corpus file (default .driveros/corpus.jsonl)")
    parser.add_argument("--no-record", action="store_true", help="do not record to the corpus")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--install-hook", action="store_true", help="install the git hooks")
    mode.add_argument("--hook", metavar="FILE", type=Path, help=argparse.SUPPRESS)
    mode.add_argument("--reconcile", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--force", action="store_true", help="replace hooks that are not ours")


async def _run(args: argparse.Namespace, executable: str) -> int:
    from driveros._git import run_git
    from driveros._unicode import terminal_safe
    from driveros.cli._common import open_corpus, provider_from_spec
    from driveros.config import load_environment
    from driveros.dogfood import (
        install_hooks,
        propose,
        reconcile,
        record_proposal,
        staged_diff,
        write_into_message_file,
    )

    env = load_environment()
    repo = Path((await run_git(["rev-parse", "--show-toplevel"], cwd=Path.cwd())).text.strip())
    if args.install_hook:
        for path in await install_hooks(repo, executable=executable, force=args.force):
            sys.stderr.write(f"installed {path}\n")
        return 0
    corpus = await open_corpus(env, args.corpus)
    if args.reconcile:
        try:
            verdict = await reconcile(repo, corpus)
        except DriverosError as exc:
            sys.stderr.write(f"driveros commit-msg: could not record the verdict: {exc}\n")
            return 0  # a hook never fails the commit
        if verdict is not None:
            sys.stderr.write(f"driveros commit-msg: recorded '{verdict.label}'\n")
        return 0
    try:
        diff = await staged_diff(repo)
        provider = provider_from_spec(args.provider, env, model=args.model)
        try:
            recent = (await run_git(["log", "-10", "--format=%s"], cwd=repo, check=False)).text
            message = await propose(provider, diff, recent=recent.strip())
            if not args.no_record:
                try:
                    await record_proposal(
                        repo, corpus, diff=diff, message=message, provider=provider
                    )
                except DriverosError as exc:  # e.g. a planted link: the message still stands
                    sys.stderr.write(f"driveros commit-msg: not recorded: {exc}\n")
        finally:
            await provider.aclose()
    except DriverosError as exc:
        if args.hook is not None:
            sys.stderr.write(f"driveros commit-msg: no message proposed: {exc}\n")
            return 0  # leave git's message file as it was
        raise
    if args.hook is not None:
        await asyncio.to_thread(
            write_into_message_file, args.hook, terminal_safe(message), repo=repo
        )
        return 0
    sys.stdout.write(terminal_safe(message))
    return 0


def run(args: argparse.Namespace) -> int:
    # The hooks call back into this very executable (falling back to PATH).
    executable = str(Path(sys.argv[0]).resolve()) if sys.argv and sys.argv[0] else "driveros"
    return asyncio.run(_run(args, executable))
