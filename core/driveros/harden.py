"""Defense in depth for processes that hold keys: not dumpable (docs/security.md).

:func:`not_dumpable` sets ``PR_SET_DUMPABLE`` to 0, so ``/proc/<pid>/environ``, ``mem`` and
ptrace are closed to other processes of the same user (only root, or a process with
CAP_SYS_PTRACE, still reaches them). Linux only; elsewhere, and where ``prctl`` is not
available, it does nothing. A leaf: imports nothing of driveros.
"""

from __future__ import annotations

import ctypes
import sys

__all__ = ["dumpable", "not_dumpable"]

_PR_SET_DUMPABLE = 4
_PR_GET_DUMPABLE = 3


def _prctl(option: int, value: int) -> int | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        # The process's own symbols include libc's (find_library would run ldconfig).
        libc = ctypes.CDLL(None, use_errno=True)
        result: int = libc.prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        return None
    return result


def not_dumpable() -> bool:
    """Make this process not dumpable; whether it is now (False off Linux)."""
    return _prctl(_PR_SET_DUMPABLE, 0) == 0 and dumpable() is False


def dumpable() -> bool | None:
    """Whether this process is dumpable (None where that cannot be asked)."""
    result = _prctl(_PR_GET_DUMPABLE, 0)
    return None if result is None or result < 0 else bool(result)
