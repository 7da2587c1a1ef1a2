"""``driveros issue-bot``: propose a patch for an issue without touching the workspace."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import get_args

from driveros._errors import ConfigError
from driveros._plural import files
from driveros._unicode import json_terminal_safe, terminal_safe
from driveros.cli._input import read_input, stdin_usable
from driveros.cli._options import add_run_options, run_values
from driveros.cli._parser import ArgumentParser
from driveros.config import ApproveMode


def configure(parser: ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("issue", nargs="?", default="-", help="issue markdown file, or - (stdin)")
    source.add_argument("--github", metavar="OWNER/REPO#N", help="fetch the issue from GitHub")
    parser.add_argument("--workspace", type=Path, default=Path())
    parser.add_argument("--out", type=Path, default=Path(".driveros/issue-bot"))
    add_run_options(parser, "provider", "model", "max_iterations")
    parser.add_argument(
        "--approve",
        # every approval mode but ``ask`` through an editor: the bot runs in a terminal
        choices=tuple(mode for mode in get_args(ApproveMode) if mode != "ask"),
        default="policy",
        help="approval of commands in the scratch copy (default: the safe allowlist)",
    )
    parser.add_argument("--corpus", type=Path, help="corpus file (default .driveros/corpus.jsonl)")
    parser.add_argument("--no-record", action="store_true", help="do not record to the corpus")
    parser.add_argument("--format", choices=("text", "json"), default="text")


async def _run(args: argparse.Namespace, text: str | None) -> int:
    from driveros.agent import Event
    from driveros.cli._common import open_corpus
    from driveros.config import load_environment
    from driveros.dogfood import fetch_github_issue, parse_markdown_issue, run_issue_bot
    from driveros.runs import RunOptions
    from driveros.state import startup_gc

    await startup_gc()  # what killed driveros processes left, as every entry point does
    env = load_environment()
    if args.github:
        issue = await fetch_github_issue(args.github, env)
    elif args.issue == "-":
        if stdin_usable() and sys.stdin.isatty():
            raise ConfigError("pass an issue file, pipe the issue in, or use --github")
        issue = parse_markdown_issue(await asyncio.to_thread(read_input, "-"), source="stdin")
    else:
        assert text is not None
        issue = parse_markdown_issue(text, source=args.issue)

    async def on_event(event: Event) -> None:
        if event.type == "tool_call":
            sys.stderr.write(terminal_safe(f"  > {event.name} {event.arguments}") + "\n")
        elif event.type == "result":
            sys.stderr.write(f"  = {event.outcome}\n")

    result = await run_issue_bot(
        issue,
        workspace=args.workspace.resolve(),
        out_dir=args.out,
        env=env,
        on_event=on_event,
        options=RunOptions(**run_values(args)),
        approve=args.approve,
        corpus=None if args.no_record else await open_corpus(env, args.corpus),
    )
    if args.format == "json":
        sys.stdout.write(json_terminal_safe(result.model_dump_json()) + "\n")
    else:
        sys.stdout.write(f"{result.patch_path}\n{result.summary_path}\n")
    sys.stderr.write(
        f"issue-bot: {result.outcome}, {files(len(result.files))} changed"
        + (f", corpus record {result.record_id}" if result.record_id else "")
        + "\n"
    )
    return result.exit_code


def run(args: argparse.Namespace) -> int:
    import asyncio

    text: str | None = None
    if not args.github and args.issue != "-":
        text = read_input(args.issue)
    return asyncio.run(_run(args, text))
