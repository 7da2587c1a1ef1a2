"""The ``driveros`` command: a dispatcher over lazily imported subcommand modules.

Each subcommand lives in ``driveros.cli._<name>`` and exposes
``configure(parser: ArgumentParser) -> None`` and ``run(args: Namespace) -> int``
(``run`` may be a coroutine function). Modules are imported only when their command runs,
so ``driveros --help`` stays fast.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import sys
from collections.abc import Sequence
from types import ModuleType

from driveros._errors import DriverosError, ProviderError
from driveros.cli._fail import fail, requested_format
from driveros.cli._parser import ArgumentParser, UsageError

#: name -> (module, one-line help). Order is the order shown in --help.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "agent": ("driveros.cli._agent", "run the agent on a task (think, act, observe)"),
    "playground": ("driveros.cli._playground", "send one prompt to every configured provider"),
    "memory": ("driveros.cli._memory", "inspect and manage long-term memory"),
    "eval": ("driveros.cli._eval", "run and compare eval suites"),
    "corpus": ("driveros.cli._corpus", "manage the dogfood corpus of human verdicts"),
    "council": ("driveros.cli._council", "adversarial review by several models"),
    "commit-msg": ("driveros.cli._commit_msg", "write a commit message for the staged diff"),
    "issue-bot": ("driveros.cli._issue_bot", "propose a patch for an issue"),
    "gc": ("driveros.cli._gc", "remove what ended driveros processes left behind"),
    "trust": ("driveros.cli._trust", "trust a workspace, list or revoke trusted workspaces"),
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
    sys.exit(main(argv))
