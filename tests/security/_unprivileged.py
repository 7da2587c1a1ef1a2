"""Running driveros as an unprivileged user (``nobody`` through runuser/setpriv when the
tests run as root): the local tier and the one-shot overlay need no root."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import driveros

#: Where driveros and its dependencies are, for an interpreter that runs as another user.
SRC = [str(Path(driveros.__file__).parents[1]), *[p for p in sys.path if "site-packages" in p]]


def as_user(user: str) -> list[str]:
    """The command prefix that runs the rest as ``user`` (the test skips without one)."""
    if runuser := shutil.which("runuser"):
        return [runuser, "-u", user, "--"]
    if setpriv := shutil.which("setpriv"):
        return [setpriv, "--reuid", user, "--regid", user, "--init-groups", "--"]
    pytest.skip("neither runuser nor setpriv is installed: no unprivileged user can be made")


def interpreter_for(prefix: list[str]) -> str | None:
    """A Python of our version that the unprivileged user can run with our packages."""
    probe = f"import sys, json; sys.path[:0] = {json.dumps(SRC)}; import driveros.sandbox"
    for candidate in (os.path.realpath(sys.executable), "/usr/bin/python3"):
        try:
            done = subprocess.run(
                [*prefix, candidate, "-c", probe], capture_output=True, timeout=60, check=False
            )
        except OSError:
            continue
        if done.returncode == 0:
            return candidate
    return None


def unprivileged() -> tuple[list[str], str]:
    """The prefix that drops root (none when not root) and the Python to run under it (the
    test skips without one)."""
    prefix = [] if os.geteuid() != 0 else as_user("nobody")
    python = interpreter_for(prefix)
    if python is None:
        pytest.skip("no Python of this version with driveros is readable by an unprivileged user")
    return prefix, python


def run_unprivileged(script: str, workspace: Path) -> dict[str, Any]:
    """Run ``script`` (``argv[1]``: ``workspace``, ``argv[2]``: :data:`SRC` as JSON) as an
    unprivileged user; the JSON object it printed. It must exit 0."""
    prefix, python = unprivileged()
    done = subprocess.run(
        [*prefix, python, "-c", script, str(workspace), json.dumps(SRC)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


@pytest.fixture
def nobody_workspace() -> Iterator[Path]:
    """A workspace the unprivileged user may write (outside pytest's root-only tmp_path)."""
    ws = Path(tempfile.mkdtemp(prefix="driveros-nobody-"))
    ws.chmod(0o777)
    try:
        yield ws
    finally:
        shutil.rmtree(ws, ignore_errors=True)
