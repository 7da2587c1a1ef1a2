"""``driveros agent``: run the agent on a task with the Unix contract of DESIGN.md.

stdout carries data only (``text``: the answer and a SUMMARY line; ``json``: one result
object; ``ndjson``: every event, ending with ``result``); the live trace, banners and errors
go to stderr; questions go to /dev/tty and fail fast without one. Exit codes follow
``driveros.agent.EXIT_CODES``; SIGINT/SIGTERM cancel cleanly with exit 7.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from driveros._errors import ConfigError, DriverosError
from driveros.agent import (
    EXIT_CODES,
    Event,
    RedactingFilter,
    Redactor,
    Result,
    RunReport,
    RunSpec,
    approval_policy,
    execute_run,
)
from driveros.cli._output import TraceWriter, result_json, summary_line
from driveros.cli._output_review import council_gate, finish_review, review_prompt_check
from driveros.config import PROVIDER_ORDER, Environment, load_environment

T = TypeVar("T")


def configure(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--task", metavar="TEXT|-", help="what the agent should do; '-' reads it from stdin")
    add(
        "--format",
        choices=("text", "json", "ndjson"),
        default="text",
        help="stdout: answer + SUMMARY line (text), one result object (json), every event (ndjson)",
    )
    add("--provider", choices=PROVIDER_ORDER, help="default: the first configured one")
    add("--model", help="model name (wins over the *_MODEL variables)")
    add("--workspace", type=Path, default=Path(), metavar="DIR", help="default: .")
    add("--sandbox", choices=("local", "docker"), default="local", help="where tools run")
    add("--runtime", choices=("runc", "runsc"), default="runc", help="docker runtime")
    add("--untrusted", action="store_true", help="treat the workspace as hostile")
    add("--network", action="store_true", help="allow network inside the docker sandbox")
    add(
        "--memory",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="long-term memory: recall before, store after a verified answer",
    )
    add("--max-iterations", type=_positive_int, default=30, metavar="N", help="model turns")
    add("--max-wall", type=_positive_float, default=900.0, metavar="SECONDS", help="run time")
    add(
        "--first-byte-timeout",
        type=_positive_float,
        metavar="SECONDS",
        help="give up on a provider that sends nothing after a request (default: 60)",
    )
    add(
        "--idle-timeout",
        type=_positive_float,
        metavar="SECONDS",
        help="give up on a stream that stays silent this long (default: 60)",
    )
    add("--review", action="store_true", help="work on a scratch copy, then review the diff")
    add(
        "--approve",
        choices=("ask", "interactive", "policy", "never"),
        default="policy",
        help="who decides tool calls that are not read-only: ask (on /dev/tty; interactive "
        "is an alias), policy (allowlist, the rest refused), never (read-only tools only)",
    )
    add(
        "--review-action",
        choices=("prompt", "commit", "discard", "keep"),
        default="prompt",
        help="what --review does with the changes (prompt asks on /dev/tty)",
    )
    add(
        "--council",
        action="store_true",
        help="with --review: the council (other providers) reviews the diff before you do",
    )
    add(
        "--allow-secret-file",
        action="append",
        default=[],
        metavar="GLOB",
        help="let the agent read a deny-listed secret file (.env, keys...); repeatable",
    )


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def _diagnostics_enabled(env: Environment) -> bool:
    """``DRIVEROS_DIAGNOSTICS=off`` (or 0/false/no) turns the build-diagnostics feed off."""
    value = (env.get("DRIVEROS_DIAGNOSTICS") or "on").strip().lower()
    return value not in ("0", "off", "false", "no")


async def _cancellable(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` as a task that SIGINT and SIGTERM cancel (CancelledError comes out)."""
    loop = asyncio.get_running_loop()
    task = asyncio.create_task(work)
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    try:
        return await task
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def _err(message: str) -> None:
    try:
        sys.stderr.write(message.rstrip("\n") + "\n")
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass


class _Stdout:
    """stdout that tolerates a closed pipe (``| head``)."""

    def __init__(self) -> None:
        self.broken = False

    def write(self, text: str) -> None:
        if self.broken:
            return
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):
            self.broken = True
            # The reader left (``| head``): point stdout at /dev/null so the interpreter's
            # final flush does not complain; the run itself finishes normally.
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                os.close(devnull)
            except (OSError, ValueError):
                pass


def _read_task(args: argparse.Namespace) -> str:
    if args.task is None:
        raise ConfigError("driveros agent: error: --task is required (use '-' to read stdin)")
    task = sys.stdin.read() if args.task == "-" else args.task
    if not task.strip():
        raise ConfigError("driveros agent: error: the task is empty")
    return str(task)


def run(args: argparse.Namespace) -> int:
    try:
        task = _read_task(args)
        env = load_environment()
    except ConfigError as exc:
        _err(str(exc))
        return EXIT_CODES["setup_error"]
    redactor = Redactor(env.secret_values())
    log_filter = RedactingFilter(redactor)
    for handler in logging.getLogger().handlers:
        handler.addFilter(log_filter)
    try:
        return asyncio.run(_run(args, task, env))
    except DriverosError as exc:
        _err(f"driveros: {redactor.text(str(exc))}")
        return EXIT_CODES["setup_error"]


async def _run(args: argparse.Namespace, task: str, env: Environment) -> int:
    workspace = args.workspace.expanduser()
    if not workspace.is_dir():
        raise ConfigError(f"workspace is not a directory: {workspace}")
    spec = RunSpec(
        task=task,
        workspace=workspace.resolve(),
        provider=args.provider,
        model=args.model,
        sandbox=args.sandbox,
        runtime=args.runtime,
        untrusted=args.untrusted,
        network=args.network,
        memory=args.memory,
        max_iterations=args.max_iterations,
        max_wall_s=args.max_wall,
        first_byte_timeout_s=args.first_byte_timeout,
        idle_timeout_s=args.idle_timeout,
        approve=args.approve,
        review=args.review,
        diagnostics=_diagnostics_enabled(env),
        allow_secret_files=args.allow_secret_file,
    )
    if args.council and not args.review:
        raise ConfigError("driveros agent: error: --council needs --review")
    # Fail fast (exit 1) before any work when a question could not be asked.
    if args.approve in ("ask", "interactive"):
        approval_policy(args.approve)
    if args.review and args.review_action == "prompt":
        review_prompt_check()
    out = _Stdout()
    trace = TraceWriter(sys.stderr) if args.format != "ndjson" else None
    results: list[Result] = []

    providers: list[str] = []

    async def on_event(event: Event) -> None:
        if event.type == "run_started":
            providers.append(event.provider)
        if event.type == "result":
            results.append(event)
        if args.format == "ndjson":
            out.write(event.model_dump_json() + "\n")
        if trace is not None:
            trace.write(event)

    report: RunReport | None = None
    try:
        report = await _cancellable(execute_run(spec, env=env, on_event=on_event))
    except asyncio.CancelledError:
        pass  # the run emitted its ``canceled`` result before re-raising
    result = results[-1] if results else None
    if result is None:  # canceled before the run could even start
        _err("driveros: canceled")
        return EXIT_CODES["canceled"]
    review_ok = True
    refused_by_council = False
    if report is not None and report.scratch is not None:
        action = args.review_action
        if args.council and report.changes:
            verdict = await council_gate(report, task=task, env=env, author=providers)
            if verdict == "reject" and action in ("commit", "keep"):
                _err("driveros: the council rejected the change: discarding it")
                action, refused_by_council = "discard", True
        try:
            review_ok = await _cancellable(finish_review(report, task=task, action=action))
        except asyncio.CancelledError:
            _err("driveros: review: canceled; changes discarded")
            return EXIT_CODES["canceled"]
    if args.format == "json":
        out.write(result_json(result) + "\n")
    elif args.format == "text":
        if result.answer:
            out.write(result.answer.rstrip("\n") + "\n")
        out.write(summary_line(result) + "\n")
    if result.outcome == "setup_error" and result.error:
        _err(f"driveros: {result.error}")
    if not review_ok:
        return EXIT_CODES["setup_error"]
    if refused_by_council:
        return EXIT_CODES["refused"]
    return result.exit_code
