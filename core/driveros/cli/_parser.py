"""argparse with the driveros Unix contract: usage errors exit 1 (never argparse's 2).

Errors are raised (``UsageError``) so the caller reports them once, in the requested format.
Every parser rejects the unknown arguments at its own level, so ``driveros agent --bogus``
shows the usage of ``driveros agent``, not of ``driveros`` (subcommands consume the rest of
the line, so what comes back to a parser is its own).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn


class UsageError(Exception):
    """Raised instead of exiting so the caller decides how a usage error is reported."""


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise UsageError(f"{self.prog}: error: {message}")

    def add_subparsers(self, **kwargs: Any) -> Any:
        kwargs.setdefault("parser_class", ArgumentParser)
        return super().add_subparsers(**kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras
