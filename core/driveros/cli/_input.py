"""Reading what a command is given (a file, or ``-`` for stdin) as text, never a traceback.

Bytes that are not UTF-8 are kept as ``\\xNN`` escapes (the text stays encodable everywhere,
and the reader sees where they were); an unreadable file or a closed stdin is a setup error.
Blocking: call it off the event loop (``asyncio.to_thread``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from driveros._errors import ConfigError
from driveros._unicode import printable
from driveros.cli._fail import CLOSED_STREAMS


def stdin_usable() -> bool:
    return sys.stdin is not None and "stdin" not in CLOSED_STREAMS


def read_input(source: str) -> str:
    """The text of the file ``source``, or of stdin for ``-``."""
    try:
        if source == "-":
            if not stdin_usable():
                raise ConfigError("nothing to read: stdin is closed")
            raw = getattr(sys.stdin, "buffer", None)
            data = (
                raw.read()
                if raw is not None
                else sys.stdin.read().encode("utf-8", "surrogateescape")
            )
        else:
            data = Path(source).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {source}: {exc.strerror or exc}") from exc
    return printable(data.decode("utf-8", "surrogateescape"))
