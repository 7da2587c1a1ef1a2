"""Helpers for CLI tests: run the real ``driveros`` executable against a scripted model."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
from tests._scripted import calc_repo as calc_repo  # the fixture, for these tests
from tests._scripted import model_environ

from driveros.testing import ScriptedModelServer

DRIVEROS = Path(sys.executable).parent / "driveros"
SECRET = "sk-live-zyxwvutsrqponm9876"


@pytest.fixture
def git_repo(calc_repo: Path) -> Path:
    """The calc repository as a git repository with one commit."""
    (calc_repo / ".gitignore").write_text("__pycache__/\n")
    git = ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=calc_repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=calc_repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "initial"], cwd=calc_repo, check=True)
    return calc_repo


def cli_environ(
    server: ScriptedModelServer | None, wire: Literal["openai", "anthropic"] = "openai"
) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    env = {
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
        # pytest runs inside the sandbox start much faster without the venv's plugins
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.com",
        # the test's private state and config directories (tests/conftest.py), never the
        # real ones
        "DRIVEROS_STATE_DIR": os.environ.get("DRIVEROS_STATE_DIR", ""),
        "XDG_CONFIG_HOME": os.environ.get("XDG_CONFIG_HOME", ""),
        "XDG_STATE_HOME": os.environ.get("XDG_STATE_HOME", ""),
        # the scratch strategy a test is parametrized over (tests/faults/conftest.py)
        "DRIVEROS_SCRATCH_STRATEGY": os.environ.get("DRIVEROS_SCRATCH_STRATEGY", ""),
    }
    if server is None:
        return env
    return env | model_environ(server, wire, SECRET)


@dataclass
class CliRun:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def lines(self) -> list[Any]:
        return [json.loads(line) for line in self.stdout.splitlines()]

    def events(self, kind: str) -> list[Any]:
        """The ``--format ndjson`` events of type ``kind``, in order."""
        return [e for e in self.lines() if e["type"] == kind]


async def start_cli(
    *args: str,
    env: dict[str, str],
    cwd: Path,
    stdin: bool = False,
    global_args: tuple[str, ...] = (),
) -> asyncio.subprocess.Process:
    """Start ``driveros agent`` in its own session: it has no controlling terminal."""
    return await asyncio.create_subprocess_exec(
        str(DRIVEROS),
        *global_args,
        "agent",
        *args,
        stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )


async def run_cli(
    *args: str,
    server: ScriptedModelServer | None,
    cwd: Path,
    wire: Literal["openai", "anthropic"] = "openai",
    stdin: str | None = None,
    extra_env: dict[str, str] | None = None,
    global_args: tuple[str, ...] = (),
) -> CliRun:
    env = cli_environ(server, wire) | (extra_env or {})
    proc = await start_cli(
        *args, env=env, cwd=cwd, stdin=stdin is not None, global_args=global_args
    )
    out, err = await proc.communicate(stdin.encode() if stdin is not None else None)
    assert proc.returncode is not None
    return CliRun(proc.returncode, out.decode(), err.decode())


async def run_ndjson(
    task: str,
    *args: str,
    server: ScriptedModelServer | None,
    cwd: Path,
    review_action: str | None = None,
) -> CliRun:
    """``driveros agent --task TASK ARGS… --format ndjson``, under ``--review --review-action
    REVIEW_ACTION`` when one is given."""
    review = ("--review", "--review-action", review_action) if review_action else ()
    return await run_cli(
        "--task", task, *args, *review, "--format", "ndjson", server=server, cwd=cwd
    )
