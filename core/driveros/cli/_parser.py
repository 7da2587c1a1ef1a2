"""argparse with the driveros Unix contract: usage errors exit 1 (never argparse's 2)."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn


class UsageError(Exception):
    """Raised instead of exiting so the caller decides how a usage error is reported."""


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise UsageError(f"{self.prog}: error: {message}")
