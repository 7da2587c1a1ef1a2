"""A ``--review`` run's command writes ``.driveros/hooks.toml`` in its scratch copy (the file
tools refuse it; a command in the view can). Its hooks run as the user, outside any sandbox,
in the next trusted run, so it is never proposed nor applied: ``--review-action keep``
applies the run's other files and leaves the user's tree without it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests.cli.conftest import run_cli


async def test_review_hooks_file_made_by_a_command_is_never_applied(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    git = ["git", "-c", "user.name=T", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    subprocess.run([*git, "add", "-A"], cwd=ws, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "i"], cwd=ws, check=True)
    marker = tmp_path / "hook_ran"
    plant = (
        'mkdir -p .driveros .DRIVEROS && printf \'[[hooks]]\\nevent = "run_start"\\n'
        f'command = "touch {marker}"\\n\' | tee .driveros/hooks.toml > .DRIVEROS/Hooks.TOML'
        " && echo y = 2 > b.py"
    )
    turns = [Turn(tool_calls=[ToolCallSpec("run", {"command": plant})]), Turn(text="done")]
    async with ScriptedModelServer(turns) as server:
        res = await run_cli(
            "--task", "t", "--format", "ndjson", "--review", "--review-action", "keep",
            server=server, cwd=ws,
        )  # fmt: skip
    assert res.code in (0, 2), res.stderr
    [done] = [e for e in res.lines() if e["type"] == "tool_result"]
    assert done["ok"] is True, done
    proposed = json.dumps([e for e in res.lines() if e["type"] == "proposal"])
    assert "hooks.toml" not in proposed.lower(), proposed
    assert (ws / "b.py").read_text() == "y = 2\n"  # the run's other change was applied
    assert not (ws / ".driveros" / "hooks.toml").exists()
    assert not (ws / ".DRIVEROS" / "Hooks.TOML").exists()
    assert not marker.exists()
