"""Reporting a command that ends before (or instead of) its work: once, in the asked format.

Every exit path of every subcommand goes through here or prints its own result: the message
goes to stderr once, and with ``--format json|ndjson`` stdout gets one result object
(``outcome: setup_error``, ``exit_code`` equal to the exit status, ``error``), so a script
that reads stdout always finds an answer.

Once a result is printed, the exit status is its ``exit_code`` (:func:`hold_exit_status`):
SIGTERM, SIGHUP, SIGINT and SIGQUIT arriving later no longer end the process by the signal.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

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
    hold_exit_status(exit_code)
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


#: The signals that cancel a command before its result is out.
LATE_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)
#: Seconds the cleanup still under way may take once such a signal arrived after the result.
LATE_GRACE_S = 1.0
_held: list[int] = []


def hold_exit_status(exit_code: int) -> None:
    """The result (with ``exit_code``) is being printed: from now on a late signal cannot
    change the exit status. The cleanup under way goes on; a late signal only bounds it: after
    :data:`LATE_GRACE_S` the process ends with ``exit_code``. Main thread only (a no-op
    elsewhere)."""
    if threading.current_thread() is not threading.main_thread():
        return
    first = not _held
    _held[:] = [exit_code]
    if first:
        for sig in LATE_SIGNALS:
            signal.signal(sig, _late_signal)


def final_exit(exit_code: int) -> None:
    """Right before the interpreter's own shutdown (which puts the default action back on
    every signal handled in Python): the late signals are ignored until the process is gone."""
    hold_exit_status(exit_code)
    if threading.current_thread() is threading.main_thread():
        for sig in LATE_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)


def _late_signal(signum: int, frame: FrameType | None) -> None:
    timer = threading.Timer(LATE_GRACE_S, _exit_now)
    timer.daemon = True
    try:
        timer.start()
    except RuntimeError:  # no new thread now (the interpreter is shutting down): ignored
        pass


def _exit_now() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, RuntimeError):
            pass
    os._exit(_held[0] if _held else 1)
