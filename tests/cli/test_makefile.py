"""``make agent``: the task reaches the agent untouched; the recipe is not echoed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import REPO_ROOT

from .conftest import cli_environ

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """The Makefile in a project whose .venv is already set up (points at this venv)."""
    shutil.copy(REPO_ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / "pyproject.toml").write_text("")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "driveros").symlink_to(Path(sys.executable).parent / "driveros")
    stamp = tmp_path / ".venv" / ".installed-stamp"
    stamp.touch()
    later = (tmp_path / "pyproject.toml").stat().st_mtime + 10
    os.utime(stamp, (later, later))  # up to date: make never reinstalls
    return tmp_path


def make_agent(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "agent", *args],
        cwd=clone,
        env=cli_environ(None),  # no provider: the run ends setup_error right after run_started
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    "task",
    [
        "fix the `add` function, it costs $5",
        "x `touch f` $(touch g) \"$HOME\" 'q' \\n # not a comment",
        "make syntax too: $(shell touch h) ${HOME} $$5",
    ],
)
def test_make_agent_passes_the_task_untouched(clone: Path, task: str) -> None:
    proc = make_agent(clone, f"TASK={task}", "ARGS=--format ndjson")
    started = json.loads(proc.stdout.splitlines()[0])
    assert started["type"] == "run_started" and started["task"] == task
    assert not any((clone / name).exists() for name in ("f", "g", "h"))
    assert "driveros agent --task" not in proc.stdout + proc.stderr  # the recipe is not echoed
    assert "agent] Error 1" in proc.stderr  # the agent's exit code, as make reports it
    assert proc.returncode != 0


def test_make_agent_without_a_task_prints_its_usage(clone: Path) -> None:
    proc = make_agent(clone)
    assert proc.returncode != 0
    assert 'usage: make agent TASK="what the agent should do"' in proc.stderr
