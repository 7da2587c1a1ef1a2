"""Run a shell command under strace and report what it opened and executed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

#: What programs themselves need outside any workspace (loader, libc, locale, their own data).
SYSTEM_PREFIXES = (
    "/usr/",
    "/lib/",
    "/lib64/",
    "/etc/ld.so.",
    "/etc/locale.alias",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/magic",
    "/etc/gitconfig",
    "/etc/gitattributes",
    "/etc/mime.types",
    "/proc/self/",
    "/proc/filesystems",
    "/proc/meminfo",
    "/proc/stat",
    "/sys/devices/system/cpu/",
    "/sys/fs/cgroup/",
    "/dev/null",
    "/dev/tty",
    "/dev/urandom",
)
_LINE = re.compile(r"^(\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+)(<[^>]*>)?")
_DIRFD = re.compile(r'^(AT_FDCWD|\d+)(?:<([^>]*)>)?, "((?:[^"\\]|\\.)*)"')
_EXEC = re.compile(r'^"((?:[^"\\]|\\.)*)"')


@dataclass
class Trace:
    opened: list[str] = field(default_factory=list)
    executed: list[str] = field(default_factory=list)
    pids: set[str] = field(default_factory=set)
    raw: str = ""


def require_tracer() -> str:
    strace = shutil.which("strace")
    if strace is None or shutil.which("dash") is None:
        if os.environ.get("DRIVEROS_CI") == "1":
            pytest.fail("strace and dash are needed (.ci/run installs them)")
        pytest.skip("strace or dash is not installed")
    return strace


def trace_command(command: str, *, cwd: Path, env: dict[str, str], out: Path) -> Trace:
    """Run ``dash -c command`` in ``cwd`` under ``strace -f``; every path it tried to open
    (resolved, failed attempts too) and every program it tried to execute."""
    log = out / "strace.log"
    subprocess.run(
        [
            require_tracer(),
            "-f",
            "-qq",
            "-y",
            "-s",
            "4096",
            "-e",
            "trace=open,openat,openat2,execve,execveat",
            "-o",
            str(log),
            "dash",
            "-c",
            command,
        ],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=30,
        check=False,
    )
    text = log.read_text(errors="replace")
    trace = Trace(raw=text)
    for line in text.splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        pid, call, args, result, resolved = m.groups()
        trace.pids.add(pid)
        if call.startswith("execve"):
            e = _EXEC.match(args)
            if e is not None:
                trace.executed.append(e.group(1))
            continue
        if call == "open":
            e = _EXEC.match(args)
            base, name = str(cwd), e.group(1) if e else ""
        else:
            d = _DIRFD.match(args)
            if d is None:
                continue
            base, name = d.group(2) or str(cwd), d.group(3)
        if int(result) >= 0 and resolved:
            trace.opened.append(resolved[1:-1])
        trace.opened.append(os.path.normpath(os.path.join(base, name)))
    return trace


def outside(trace: Trace, *, allowed: tuple[str, ...]) -> list[str]:
    """Opened paths that are neither in an allowed directory nor a system file."""
    bad = []
    own = tuple(f"/proc/{pid}/" for pid in trace.pids)  # a traced process reading itself
    for path in trace.opened:
        if path.startswith(own):
            continue
        ok = any(path == a or path.startswith(a.rstrip("/") + "/") for a in allowed)
        if not ok and not path.startswith(SYSTEM_PREFIXES) and path not in ("/dev/null",):
            bad.append(path)
    return bad
