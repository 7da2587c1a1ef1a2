"""``--add-dir`` folders that show what no sandbox may show: a folder holding the home
directory (its ``~/.config/driveros/env`` holds the provider keys) though it is not the home
itself, and a folder inside driveros' state directory (other runs' held views, memory).
Both are refused before any request, as a folder holding the state directory is."""

from __future__ import annotations

from pathlib import Path

import pytest

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests._scripted import calc_repo as calc_repo  # the fixture
from tests.cli.conftest import run_cli

KEY = "sk-user-config-key-0042"


@pytest.fixture
def homes(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A directory of homes, the user's home inside it (a provider key in its config file,
    nothing named like a secret) and a state directory elsewhere."""
    homes = tmp_path / "homes"
    home = homes / "me"
    config = home / ".config" / "driveros"
    config.mkdir(parents=True)
    (config / "env").write_text(f"OPENAI_API_KEY={KEY}\n")
    state = tmp_path / "state"
    (state / "runs" / "held").mkdir(parents=True)
    (state / "runs" / "held" / "notes.txt").write_text("another run's state\n")
    return homes, home, state


@pytest.mark.parametrize("which", ["holds_home", "inside_state"])
async def test_add_dir_attack_a_folder_showing_home_or_state_is_refused(
    calc_repo: Path, homes: tuple[Path, Path, Path], which: str
) -> None:
    parent, home, state = homes
    folder = parent if which == "holds_home" else state / "runs"
    target = home / ".config" / "driveros" / "env" if which == "holds_home" else None
    read = ToolCallSpec("read_file", {"path": str(target or state / "runs" / "held" / "notes.txt")})
    async with ScriptedModelServer([Turn(tool_calls=[read]), Turn(text="done")]) as server:
        run = await run_cli(
            "--task", "t", "--format", "ndjson", "--add-dir", str(folder),
            server=server, cwd=calc_repo,
            extra_env={"HOME": str(home), "DRIVEROS_STATE_DIR": str(state)},
        )  # fmt: skip
        assert server.requests == [], run.stdout
    assert run.code == 1, run.stdout + run.stderr
    assert "too wide" in run.stderr and "Traceback" not in run.stderr
    assert KEY not in run.stdout + run.stderr
