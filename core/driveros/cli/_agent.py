"""``driveros agent``: run the agent on a task with the Unix contract of DESIGN.md.

stdout carries data only (``text``: the answer and a SUMMARY line; ``json``: one result
object; ``ndjson``: every event, ending with ``result``); the live trace, banners and errors
go to stderr; questions go to /dev/tty and fail fast without one. Exit codes follow
``driveros.agent.EXIT_CODES``; SIGINT, SIGTERM, SIGHUP and SIGQUIT cancel cleanly with exit 7.
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

from pydantic import ValidationError

from driveros._errors import ConfigError, DriverosError
from driveros._unicode import printable, terminal_safe
from driveros.agent import (
    EXIT_CODES,
    Event,
    OnEvent,
    RedactingFilter,
    Redactor,
    Result,
    approval_policy,
)
from driveros.cli._add_dirs import add_add_dir_flag, parse_add_dirs
from driveros.cli._command import command_task
from driveros.cli._fail import CLOSED_STREAMS, fail, hold_exit_status
from driveros.cli._fix import fix_paths, fix_task, nothing_to_fix
from driveros.cli._options import add_run_options, invalid_run_settings, run_values
from driveros.cli._output import TraceWriter, event_json, result_json, summary_line
from driveros.cli._output_review import council_gate, finish_review, review_prompt_check
from driveros.cli._parser import UsageError
from driveros.cli._resume import add_resume_flags, prepare_resume, resume
from driveros.config import Environment, load_environment
from driveros.runs import (
    HeadlessOptions,
    RunContext,
    RunReport,
    RunSpec,
    current_errors,
    execute_run,
)
from driveros.state import state_dir

T = TypeVar("T")

#: The fields of one run (``RunSpec``) that are flags besides the run options.
_PER_RUN = ("approve", "review", "allow_secret_files")


def configure(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--task", metavar="TEXT|-", help="what the agent should do; '-' reads it from stdin")
    add(
        "--command",
        dest="custom_command",
        nargs="+",
        metavar=("NAME", "ARGS"),
        help="run a custom command (~/.config/driveros/commands/NAME.md, or a trusted "
        "workspace's .driveros/commands/): its text with $ARGUMENTS and $1… filled is the task",
    )
    add(
        "--fix",
        nargs="*",
        metavar="PATH",
        default=None,
        help="fix the build's current errors (in PATHs, default: the whole workspace): they "
        "become the run's targets; exit 0 only when every one is verifiably gone",
    )
    add(
        "--format",
        choices=("text", "json", "ndjson"),
        default="text",
        help="stdout: answer + SUMMARY line (text), one result object (json), every event (ndjson)",
    )
    add("--workspace", type=Path, default=Path(), metavar="DIR", help="default: .")
    # every run option (driveros.runs.RunSpec's fields) is a flag made from its declaration
    add_run_options(parser, *HeadlessOptions.model_fields, *_PER_RUN)
    add(
        "--trust",
        action="store_true",
        help="trust the workspace for this run only (its .env and custom checks; see "
        "`driveros trust`)",
    )
    add(
        "--review-action",
        choices=("prompt", "commit", "discard", "keep", "hold"),
        default=None,
        help="with --review: what happens to the changes (default prompt: ask on /dev/tty; "
        "hold: keep the run for `driveros runs`)",
    )
    add_resume_flags(add)
    add_add_dir_flag(add)
    add(
        "--council",
        action="store_true",
        help="with --review: the council (other providers) reviews the diff before you do",
    )
    add(
        "--mcp-config",
        type=Path,
        metavar="FILE",
        help='MCP servers whose tools the agent may use, as {"mcpServers": {...}} JSON '
        "(default: ~/.config/driveros/mcp.json when it exists); each call is approved like "
        "a command (docs/acp.md)",
    )


#: Signals that cancel a run like Ctrl-C: the result is still printed, exit code 7.
CANCEL_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


async def _cancellable(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` as a task that :data:`CANCEL_SIGNALS` cancel (CancelledError comes out).

    Before it starts, what ended driveros processes left behind (scratch copies, worktree
    entries, caches) is collected once per process."""
    await _collect_once()
    loop = asyncio.get_running_loop()
    task = asyncio.create_task(work)
    for sig in CANCEL_SIGNALS:
        loop.add_signal_handler(sig, task.cancel)
    try:
        return await task
    finally:
        for sig in CANCEL_SIGNALS:
            loop.remove_signal_handler(sig)


_collected: list[bool] = []


async def _collect_once() -> None:
    if _collected:
        return
    _collected.append(True)
    from driveros.state import startup_gc

    await startup_gc()


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
            sys.stdout.write(printable(text))
            sys.stdout.flush()
        except (OSError, ValueError):  # a closed pipe, or a terminal gone (SIGHUP: EIO)
            self.broken = True
            # The reader left (``| head``): point stdout at /dev/null so the interpreter's
            # final flush does not complain; the run itself finishes normally.
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                os.close(devnull)
            except (OSError, ValueError):
                pass


def _check_usage(args: argparse.Namespace) -> None:
    """Flags that mean nothing alone are usage errors, never silently ignored."""
    if args.task is None and args.fix is None and args.custom_command is None:
        raise UsageError(
            "driveros agent: error: --task is required (use '-' to read stdin), or --fix"
        )
    if args.custom_command is not None and args.task is not None:
        raise UsageError("driveros agent: error: --command and --task cannot be combined")
    if not args.review:
        for flag, given in (("--council", args.council), ("--review-action", args.review_action)):
            if given:
                raise UsageError(f"driveros agent: error: {flag} needs --review")
    if args.review_action is None:
        args.review_action = "prompt"


def _read_task(args: argparse.Namespace) -> str:
    """The task text; undecodable bytes (argv or stdin) are shown as ``\\xNN`` escapes."""
    if args.task is None:
        return ""  # --fix without --task: the default text is written once targets are known
    if args.task == "-":
        stream = sys.stdin
        if stream is None or "stdin" in CLOSED_STREAMS:
            raise UsageError("driveros agent: error: --task -: stdin is closed")
        try:
            raw = getattr(stream, "buffer", None)
            task = raw.read().decode("utf-8", "surrogateescape") if raw else stream.read()
        except (OSError, ValueError) as exc:
            raise UsageError(f"driveros agent: error: --task -: cannot read stdin: {exc}") from exc
    else:
        task = args.task
    if not task.strip():
        raise UsageError("driveros agent: error: the task is empty")
    return printable(task)


def run(args: argparse.Namespace) -> int:
    fmt = args.format
    try:
        prepare_resume(args)
        _check_usage(args)
        task = _read_task(args)
        env = load_environment(
            cwd=args.workspace.expanduser(), trusted=True if args.trust else None
        )
        if args.custom_command is not None:
            task = command_task(args, env)
    except UsageError as exc:
        return fail(str(exc), fmt)
    except ConfigError as exc:
        return fail(f"driveros: {exc}", fmt)
    for warning in env.warnings:
        _err(f"driveros: warning: {warning}")
    redactor = Redactor(env.secret_values())
    log_filter = RedactingFilter(redactor)
    for handler in logging.getLogger().handlers:
        handler.addFilter(log_filter)
    try:
        return asyncio.run(_run(args, task, env))
    except UsageError as exc:
        return fail(redactor.text(str(exc)), fmt)
    except DriverosError as exc:
        return fail(f"driveros: {redactor.text(str(exc))}", fmt)


def _spec(args: argparse.Namespace, task: str, env: Environment) -> RunSpec:
    workspace: Path = args.workspace.expanduser()
    try:
        if not workspace.is_dir():
            raise ConfigError(f"workspace is not a directory: {printable(str(workspace))}")
        root = workspace.resolve()
    except (OSError, ValueError, RuntimeError) as exc:
        raise ConfigError(f"workspace {printable(str(workspace))}: {exc}") from exc
    # the flags made from the run's fields (run_values), then what the CLI itself decides
    values = run_values(args)
    # DRIVEROS_DIAGNOSTICS=off holds for every front end; --fix is judged by the feed, so it
    # stays on for such a run
    values["diagnostics"] = (values["diagnostics"] and env.diagnostics_on) or args.fix is not None
    try:
        return RunSpec(
            **values,
            task=task,
            workspace=root,
            workspace_trusted=env.workspace_trusted,
            add_dirs=parse_add_dirs(args, root, state_dir(env.process_env)),
        )
    except ValidationError as exc:
        raise invalid_run_settings(exc) from exc


async def _run(args: argparse.Namespace, task: str, env: Environment) -> int:
    spec = _spec(args, task or "fix the build's errors", env)
    # Fail fast (exit 1) before any work when a question could not be asked.
    if args.approve in ("ask", "interactive"):
        approval_policy(args.approve)
    if args.review and args.review_action == "prompt":
        review_prompt_check()
    out = _Stdout()
    if args.fix is not None:
        paths = fix_paths(args.fix, spec.workspace)
        found = await _cancellable(current_errors(spec, env, paths=paths))
        targets, checks, elsewhere = found
        if not targets:
            return nothing_to_fix(args.format, out.write, paths, checks, elsewhere)
        spec = spec.model_copy(update={"task": fix_task(task, targets), "targets": targets})
    trace = TraceWriter(sys.stderr) if args.format != "ndjson" else None
    results: list[Result] = []

    providers: list[str] = []

    async def on_event(event: Event) -> None:
        if event.type == "run_started":
            providers.append(event.provider)
        if event.type == "result":
            results.append(event)  # printed last, once the review action is known
        elif args.format == "ndjson":
            out.write(event_json(event) + "\n")
        if trace is not None:
            trace.write(event)

    report: RunReport | None = None
    try:
        report = await _cancellable(_execute(args, spec, env, on_event))
    except asyncio.CancelledError:
        pass  # the run emitted its ``canceled`` result before re-raising
    if not results:  # canceled before the run could even start
        return fail("driveros: canceled", args.format, outcome="canceled", exit_code=7)
    result = results[-1]
    if args.fix is not None and result.outcome == "answered" and result.targets_fixed is not True:
        result = _amend(
            result, "unverified", "the build still reports a target of --fix (or could not check)"
        )
    if report is not None and report.scratch is not None:
        result = await _review(args, report, result, task=task, env=env, authors=providers)
    hold_exit_status(result.exit_code)  # from its printing on, a signal cannot change it
    if args.format in ("json", "ndjson"):
        out.write(result_json(result) + "\n")
    elif args.format == "text":
        if result.answer:
            out.write(terminal_safe(result.answer.rstrip("\n")) + "\n")
        out.write(summary_line(result) + "\n")
    if trace is None and result is results[-1] and result.error:
        # ndjson has no trace on stderr: say the run's error once (a review action that
        # failed already said so itself)
        _err(f"driveros: {result.outcome}: {result.error}")
    return result.exit_code


async def _execute(
    args: argparse.Namespace, spec: RunSpec, env: Environment, on_event: OnEvent
) -> RunReport:
    """The run, with the MCP servers (``--mcp-config``, else the user's own file) started for
    it and stopped after it."""
    from driveros.mcptools import configured_mcp_servers, open_mcp_tools

    spec, args.resumed = await resume(args, spec)
    servers = await asyncio.to_thread(configured_mcp_servers, args.mcp_config)
    if not servers:
        return await execute_run(
            spec, env=env, on_event=on_event, context=RunContext(**args.resumed.run)
        )

    def report(problem: str) -> None:
        _err(f"driveros: warning: {printable(problem)}")

    async with open_mcp_tools(servers, report=report, cwd=str(spec.workspace)) as tools:
        return await execute_run(
            spec,
            env=env,
            on_event=on_event,
            context=RunContext(extra_tools=tools, **args.resumed.run),
        )


async def _review(
    args: argparse.Namespace,
    report: RunReport,
    result: Result,
    *,
    task: str,
    env: Environment,
    authors: list[str],
) -> Result:
    """Carry out the review action; the result it returns tells what really happened."""
    action = args.review_action
    refused = False
    if args.council and report.changes:
        verdict = await council_gate(report, task=task, env=env, author=authors)
        if verdict == "reject" and action in ("commit", "keep"):
            _err("driveros: the council rejected the change: discarding it")
            action, refused = "discard", True
    try:
        resumed = args.resumed
        error = await _cancellable(
            finish_review(
                report,
                task=task,
                action=action,
                prior_turns=resumed.prior_turns,
                parent=resumed.parent,
            )
        )
    except asyncio.CancelledError:
        error = "review: canceled; changes discarded"
        _err(f"driveros: {error}")
        return _amend(result, "canceled", error)
    if error is not None:
        return _amend(result, "setup_error", error)
    if refused:
        return _amend(result, "refused", "the council rejected the change; it was discarded")
    return result


def _amend(result: Result, outcome: str, error: str) -> Result:
    return result.model_copy(
        update={"outcome": outcome, "exit_code": EXIT_CODES[outcome], "error": error}
    )
