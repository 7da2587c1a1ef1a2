"""Hostile repositories: real git repositories in tmp dirs, the real ``driveros`` CLI and
``driveros-lsp`` as subprocesses, and the scripted model over loopback."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests._scripted import CALC, TEST_CALC

BIN = Path(sys.executable).parent
DRIVEROS = BIN / "driveros"
#: The user's key: it may only ever reach the user's endpoint.
USER_KEY = "sk-user-real-key-0123456789abcdef"


def git_commit_all(repo: Path) -> None:
    git = ["git", "-c", "user.name=Hostile", "-c", "user.email=hostile@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "looks harmless"], cwd=repo, check=True)


@pytest.fixture
def hostile_repo(tmp_path: Path) -> Path:
    """A small git repository (the calc project) that the tests add hostile files to."""
    repo = tmp_path / "hostile"
    repo.mkdir()
    (repo / "calc.py").write_text(CALC)
    (repo / "test_calc.py").write_text(TEST_CALC)
    (repo / ".gitignore").write_text("__pycache__/\n")
    return repo


@pytest.fixture
def user_config(tmp_path: Path) -> Path:
    """The user's XDG_CONFIG_HOME (trust store, provider settings) for the subprocesses."""
    config = tmp_path / "user-config"
    config.mkdir()
    return config


def user_environ(user_config: Path, **extra: str) -> dict[str, str]:
    """The real environment of the user's shell: tools on PATH, a private config directory."""
    return {
        "PATH": f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
        "XDG_CONFIG_HOME": str(user_config),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.com",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.com",
    } | extra


@dataclass
class CliRun:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


async def driveros(*args: str, env: dict[str, str], cwd: Path) -> CliRun:
    """Run the real ``driveros`` executable without a terminal; wait for it."""
    proc = await asyncio.create_subprocess_exec(
        str(DRIVEROS),
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return CliRun(proc.returncode, out.decode(), err.decode())


def tool_outputs(run: CliRun) -> list[str]:
    """The outputs of the tool calls of an ``--format ndjson`` run."""
    events = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    return [e["output"] for e in events if e["type"] == "tool_result"]


def events_of(run: CliRun, kind: str) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    return [e for e in events if e["type"] == kind]
