"""``driveros agent --command NAME ARGS…``: a custom command from each source is the task."""

from __future__ import annotations

from pathlib import Path

from driveros.testing import ScriptedModelServer, Turn

from .conftest import run_cli

REVIEW = """---
description: Review a file
argument-hint: PATH [FOCUS]
---
Review $1 with a focus on $2. All arguments: $ARGUMENTS.
"""


def _user_command(tmp_path: Path, name: str, text: str) -> dict[str, str]:
    commands = tmp_path / "cfg" / "driveros" / "commands"
    commands.mkdir(parents=True, exist_ok=True)
    (commands / f"{name}.md").write_text(text)
    return {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}


def _first_task(server: ScriptedModelServer) -> str:
    return str(server.requests[0]["messages"][1]["content"])


async def test_cli_command_from_the_users_directory_is_the_task(
    calc_repo: Path, tmp_path: Path
) -> None:
    env = _user_command(tmp_path, "review", REVIEW)
    async with ScriptedModelServer([Turn(text="reviewed")]) as server:
        run = await run_cli(
            "--command", "review", "calc.py", "naming", "--format", "json",
            server=server, cwd=calc_repo, extra_env=env,
        )  # fmt: skip
    assert run.code in (0, 2), run.stderr
    assert run.json()["answer"] == "reviewed"
    task = _first_task(server)
    assert "Review calc.py with a focus on naming. All arguments: calc.py naming." in task
    assert "description" not in task


async def test_cli_command_from_a_trusted_workspace_only(calc_repo: Path, tmp_path: Path) -> None:
    env = _user_command(tmp_path, "other", "unrelated")
    (calc_repo / ".driveros" / "commands").mkdir(parents=True)
    (calc_repo / ".driveros" / "commands" / "ship.md").write_text("Ship it: $ARGUMENTS\n")
    async with ScriptedModelServer([Turn(text="shipped")]) as server:
        untrusted = await run_cli(
            "--command", "ship", "now", "--format", "json",
            server=server, cwd=calc_repo, extra_env=env,
        )  # fmt: skip
        assert server.requests == []
    assert untrusted.code == 1
    assert "no custom command 'ship'" in untrusted.stdout + untrusted.stderr
    async with ScriptedModelServer([Turn(text="shipped")]) as server:
        trusted = await run_cli(
            "--command", "ship", "now", "--trust", "--format", "json",
            server=server, cwd=calc_repo, extra_env=env,
        )  # fmt: skip
    assert trusted.code in (0, 2), trusted.stderr
    assert "Ship it: now" in _first_task(server)


async def test_cli_command_and_task_together_is_a_usage_error(calc_repo: Path) -> None:
    run = await run_cli("--command", "x", "--task", "y", server=None, cwd=calc_repo)
    assert run.code == 1
    assert "--command and --task" in run.stderr


async def test_cli_command_front_matter_approve_applies_unless_a_flag_says_otherwise(
    calc_repo: Path, tmp_path: Path
) -> None:
    from driveros.testing import ToolCallSpec

    env = _user_command(tmp_path, "look", "---\napprove: never\n---\nLook at $1\n")
    _user_command(tmp_path, "free", "Look at $1\n")
    touch = Turn(tool_calls=[ToolCallSpec("run", {"command": "touch ran.txt"})])
    decisions = {}
    for name in ("look", "free"):
        async with ScriptedModelServer([touch, Turn(text="looked")]) as server:
            run = await run_cli(
                "--command", name, "calc.py", "--format", "ndjson",
                "--review", "--review-action", "discard",
                server=server, cwd=calc_repo, extra_env=env,
            )  # fmt: skip
        decisions[name] = [e["decision"] for e in run.lines() if e["type"] == "approval"]
    # on a contained scratch copy the default policy runs it; the command's `never` does not
    assert decisions == {"look": ["blocked"], "free": ["allowed"]}
