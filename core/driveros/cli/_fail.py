"""Reporting a command that ends before (or instead of) its work: once, in the asked format.

Every exit path of every subcommand goes through here or prints its own result: the message
goes to stderr once, and with ``--format json|ndjson`` stdout gets one result object
(``outcome: setup_error``, ``exit_code`` equal to the exit status, ``error``), so a script
that reads stdout always finds an answer.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from driveros._unicode import printable

_DATA_FORMATS = ("json", "ndjson")
#: Standard streams the process was started without (``<&-``); now on /dev/null.
CLOSED_STREAMS: set[str] = set()


def requested_format(argv: Sequence[str]) -> str | None:
    """The last ``--format`` value on the command line (argparse prefixes too), if any."""
    found: str | None = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        name, eq, value = arg.partition("=")
        if len(name) < 4 or not "--format".startswith(name):
            continue
        if eq:
            found = value
        elif i + 1 < len(argv):
            found = argv[i + 1]
    return found


def stderr_line(message: str) -> None:
    try:
        sys.stderr.write(printable(message).rstrip("\n") + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # stderr is closed: the exit status still tells


def stdout_line(text: str) -> bool:
    """Write one line of data; False when stdout is gone (closed, a reader that left)."""
    try:
        sys.stdout.write(printable(text).rstrip("\n") + "\n")
        sys.stdout.flush()
    except (OSError, ValueError):
        return False
    return True


def fail(message: str, fmt: str | None, *, outcome: str = "setup_error", exit_code: int = 1) -> int:
    """Report ``message`` (stderr, and a result object for json/ndjson); return the exit code."""
    stderr_line(message)
    if fmt in _DATA_FORMATS:
        from driveros.agent import Result
        from driveros.runs import new_run_id

        result = Result(
            run_id=new_run_id(),
            outcome=outcome,
            exit_code=exit_code,
            error=message.removeprefix("driveros: "),
        )
        stdout_line(result.model_dump_json())
    return exit_code
