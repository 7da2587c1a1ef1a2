"""Issue 27, defense in depth: every driveros process that holds a key is not dumpable.

``driveros-lsp`` and ``driveros acp`` run as an unprivileged user with a provider key in their
environment; another process of the same user cannot read their ``/proc/<pid>/environ``,
while it can read a plain process's (the control).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import driveros_lsp
from tests.security._unprivileged import SRC, unprivileged

KEY = "sk-dumpable-7f3e9a"
PATHS = [*SRC, str(Path(driveros_lsp.__file__).parents[1])]
START = (
    "import sys, json; sys.path[:0] = json.loads(sys.argv[1]); "
    "sys.argv = sys.argv[2:]; "
    "from {module} import {func}; {func}()"
)
FRONTS = {
    "driveros-lsp": ("driveros_lsp.__main__", "main", ["driveros-lsp"]),
    "driveros acp": ("driveros.cli", "main", ["driveros", "acp"]),
    "control: a plain process": ("time", "sleep", []),
}


def test_not_dumpable_turns_dumpable_off() -> None:
    code = "from driveros.harden import not_dumpable as n, dumpable as d; print(d(), n(), d())"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(SRC)},
    )
    assert done.stdout.split() == ["True", "True", "False"]


@pytest.mark.parametrize("front", list(FRONTS))
def test_key_holding_processes_are_not_dumpable(front: str) -> None:
    prefix, python = unprivileged()
    module, func, argv = FRONTS[front]
    code = START.format(module=module, func=func)
    if func == "sleep":
        code = code.replace("sleep()", "sleep(60)")
    env = {"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": KEY, "HOME": "/tmp", "LANG": "C.UTF-8"}
    proc = subprocess.Popen(
        [*prefix, python, "-c", code, json.dumps(PATHS), *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd="/tmp",
    )
    try:
        target = _the_python(proc.pid)
        time.sleep(1.5)  # past start-up: the front end has hardened itself
        read = subprocess.run(
            [*prefix, "cat", f"/proc/{target}/environ"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    finally:
        proc.kill()
        proc.wait()
    if front.startswith("control"):
        assert KEY.encode() in read.stdout  # the attack works on a plain process
    else:
        assert read.returncode != 0 and KEY.encode() not in read.stdout
        assert b"Permission denied" in read.stderr


def _the_python(pid: int) -> int:
    """The interpreter's pid: ``pid`` itself, or the child runuser/setpriv started."""
    for _ in range(100):
        children = Path(f"/proc/{pid}/task/{pid}/children")
        try:
            kids = children.read_text().split()
        except OSError:
            kids = []
        exe = os.path.realpath(f"/proc/{pid}/exe") if os.path.exists(f"/proc/{pid}") else ""
        if "python" in exe:
            return pid
        if kids:
            return int(kids[0])
        time.sleep(0.05)
    return pid
