"""An agent run whose workspace is the home directory (``driveros agent`` started in ``~``,
an editor opened there) or a folder holding it: the local sandbox shows its workspace whole,
so ``~/.ssh``, ``~/.config`` (provider keys, tokens) and the state directory would be the
run's to read, though the sandbox promises never to mount them. Refused before any request,
as ``driveros trust``, ACP's ``cwd`` and the one-shot feed refuse such a directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests.cli.conftest import run_cli

SECRET = "correct-horse-battery-staple-home"


@pytest.mark.parametrize("where", ["home", "parent_of_home"])
@pytest.mark.parametrize("review", [False, True])
async def test_home_workspace_a_run_there_is_refused(
    tmp_path: Path, where: str, review: bool
) -> None:
    home = tmp_path / "homes" / "me"
    (home / "notes").mkdir(parents=True)
    (home / "notes" / "token.txt").write_text(f"{SECRET}\n")
    (home / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    cwd = home if where == "home" else home.parent
    token = home / "notes" / "token.txt"
    turns = [Turn(tool_calls=[ToolCallSpec("run", {"command": f"cat {token}"})]), Turn(text="x")]
    flags = ["--review", "--review-action", "discard"] if review else []
    async with ScriptedModelServer(turns) as server:
        res = await run_cli(
            "--task", "t", "--format", "ndjson", "--approve", "policy", *flags,
            server=server, cwd=cwd, extra_env={"HOME": str(home)},
        )  # fmt: skip
        assert server.requests == [], res.stdout
    assert SECRET not in res.stdout + res.stderr
    assert res.code == 1, res.stdout + res.stderr
    assert "home directory" in res.stdout + res.stderr and "Traceback" not in res.stderr
