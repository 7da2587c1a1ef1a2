"""Who owns a piece of state: a process, named so that a reused pid is not mistaken for it."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any


@cache
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return ""


def _start_time(pid: int) -> str | None:
    """The process start time in clock ticks since boot (Linux), "" where unknown, None
    when the process does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None if Path("/proc/self/stat").exists() else _exists_elsewhere(pid)
    except OSError:
        return ""
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else ""


def _exists_elsewhere(pid: int) -> str | None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return ""
    return ""


@dataclass(frozen=True)
class Owner:
    """A process: pid, start time (ticks since boot; "" where unknown), boot id and host."""

    pid: int
    start: str
    boot: str
    host: str

    @classmethod
    def current(cls) -> Owner:
        pid = os.getpid()
        return cls(pid=pid, start=_start_time(pid) or "", boot=_boot_id(), host=_host())

    def alive(self) -> bool:
        """Whether the owning process may still run. Blocking (reads /proc).

        State of another host (a shared home directory) always counts as alive: we cannot
        look at its processes. After a reboot every owner is dead.
        """
        if self.host != _host():
            return True
        if self.boot and _boot_id() and self.boot != _boot_id():
            return False
        start = _start_time(self.pid)
        if start is None:
            return False
        return not (self.start and start and start != self.start)

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "start": self.start, "boot": self.boot, "host": self.host}

    @classmethod
    def from_json(cls, data: Any) -> Owner:
        if not isinstance(data, dict):
            raise ValueError("owner is not an object")
        pid = data.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            raise ValueError("owner pid is not a positive integer")
        return cls(
            pid=pid,
            start=str(data.get("start", "")),
            boot=str(data.get("boot", "")),
            host=str(data.get("host", "")),
        )


@cache
def _host() -> str:
    return socket.gethostname()
