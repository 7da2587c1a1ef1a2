"""The ``driveros`` command: a dispatcher over lazily imported subcommand modules.

Each subcommand lives in ``driveros.cli._<name>`` and exposes
``configure(parser: ArgumentParser) -> None`` and ``run(args: Namespace) -> int``
(``run`` may be a coroutine function). Modules are imported only when their command runs,
so ``driveros --help`` stays fast.
"""

from __future__ import annotations

import asyncio
import codecs
import importlib
import inspect
import io
import logging
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from driveros._errors import DriverosError, ProviderError
from driveros.cli._fail import CLOSED_STREAMS, fail, final_exit, requested_format
from driveros.cli._parser import ArgumentParser, UsageError
from driveros.harden import not_dumpable

#: name -> (module, one-line help). Order is the order shown in --help.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "agent": ("driveros.cli._agent", "run the agent on a task (think, act, observe)"),
    "acp": ("driveros.cli._acp", "serve the Agent Client Protocol on stdio (Zed, JetBrains...)"),
    "playground": ("driveros.cli._playground", "send one prompt to every configured provider"),
    "memory": ("driveros.cli._memory", "inspect and manage long-term memory"),
    "eval": ("driveros.cli._eval", "run and compare eval suites"),
    "corpus": ("driveros.cli._corpus", "manage the dogfood corpus of human verdicts"),
    "council": ("driveros.cli._council", "adversarial review by several models"),
    "commit-msg": ("driveros.cli._commit_msg", "write a commit message for the staged diff"),
    "issue-bot": ("driveros.cli._issue_bot", "propose a patch for an issue"),
    "runs": ("driveros.cli._runs", "list, diff, apply, revert or discard held runs"),
    "gc": ("driveros.cli._gc", "remove what ended driveros processes left behind"),
    "trust": ("driveros.cli._trust", "trust a workspace, list or revoke trusted workspaces"),
    "doctor": ("driveros.cli._doctor", "check this machine and workspace, and how to fix them"),
}


def _load(module_name: str) -> ModuleType | None:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return None
        raise


def _build_parser(argv: Sequence[str]) -> tuple[ArgumentParser, dict[str, ModuleType]]:
    parser = ArgumentParser(prog="driveros", description="A coding agent behind a language server.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more log output on stderr"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    wanted = next((a for a in argv if not a.startswith("-")), None)
    modules: dict[str, ModuleType] = {}
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        if wanted is not None and wanted != name:
            sub.add_parser(name, help=help_text, add_help=False)
            continue
        module = _load(module_name) if wanted == name else None
        p = sub.add_parser(name, help=help_text, description=help_text)
        if module is not None:
            module.configure(p)
            modules[name] = module
    return parser, modules


def _setup_logging(verbosity: int) -> None:
    level = logging.WARNING - 10 * min(verbosity, 2)
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every path ends in an exit code, never in a traceback."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    fmt = requested_format(args_list)
    try:
        return _main(args_list, fmt)
    except KeyboardInterrupt:
        return fail("driveros: canceled", fmt, outcome="canceled", exit_code=7)
    except OSError as exc:  # a file the command was pointed at cannot be read or written
        where = f"{exc.filename}: " if exc.filename else ""
        return fail(f"driveros: {where}{exc.strerror or exc}", fmt)
    except Exception as exc:  # a bug: one line for the user, the traceback with -v
        logging.getLogger("driveros.cli").info("internal error", exc_info=True)
        return fail(f"driveros: internal error ({type(exc).__name__}: {exc}); -v shows more", fmt)


def _main(args_list: list[str], fmt: str | None) -> int:
    try:
        parser, modules = _build_parser(args_list)
        args = parser.parse_args(args_list)
    except UsageError as exc:
        return fail(str(exc), fmt)
    if args.version:
        from driveros import __version__

        sys.stdout.write(f"driveros {__version__}\n")
        return 0
    _setup_logging(args.verbose)
    if args.command is None:
        parser.print_help(sys.stderr)
        return fail("driveros: error: choose a command", fmt)
    module = modules.get(args.command)
    if module is None:
        return fail(f"driveros: the '{args.command}' command is not available in this build", fmt)
    try:
        outcome = module.run(args)
        if inspect.iscoroutine(outcome):
            outcome = asyncio.run(outcome)
        return int(outcome)
    except UsageError as exc:
        return fail(str(exc), fmt)
    except ProviderError as exc:
        return fail(f"driveros: {exc}", fmt, outcome="provider_error", exit_code=5)
    except DriverosError as exc:
        return fail(f"driveros: {exc}", fmt)


def entry(argv: Sequence[str] | None = None) -> None:
    sane_std_streams()
    not_dumpable()  # this process holds keys: its /proc/<pid>/environ is closed to others
    code = main(argv)
    final_exit(code)  # a signal from here on cannot change the status
    sys.exit(code)


def sane_std_streams() -> None:
    """Make the standard streams safe to use whatever the caller gave us.

    A closed descriptor (``<&-``, ``>&-``, ``2>&-``) is reopened on /dev/null, so a file opened
    later never becomes "stdout" of a command the agent runs; its Python stream stays usable
    (a closed stdin is remembered: ``--task -`` says so). Text that the stream's encoding cannot
    represent (``PYTHONIOENCODING=ascii``) is written escaped instead of failing.
    """
    codecs.register_error(_JSON_ESCAPE, _json_escape)
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDWR)
            if opened != fd:  # a lower descriptor was free too: should not happen, be safe
                os.dup2(opened, fd)
                os.close(opened)
            CLOSED_STREAMS.add(name)
        stream = getattr(sys, name)
        if stream is None or name in CLOSED_STREAMS:
            mode = "r" if fd == 0 else "w"
            stream = os.fdopen(fd, mode, encoding="utf-8", errors="backslashreplace", closefd=False)
            setattr(sys, name, stream)
        elif fd != 0 and isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors=_JSON_ESCAPE if fd == 1 else "backslashreplace")


_JSON_ESCAPE = "driveros-json-escape"


def _json_escape(exc: UnicodeError) -> tuple[str, int]:
    """``\\uXXXX`` for what the encoding cannot say: still valid JSON inside a string."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = []
    for char in exc.object[exc.start : exc.end]:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out), exc.end
