"""``driveros agent --add-dir DIR``: a second folder, read-only in the local sandbox; refused
when it holds secret files, overlaps the workspace, or asks for ``:rw`` (not supported yet)."""

from __future__ import annotations

from pathlib import Path

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from .conftest import run_cli


def _other(tmp_path: Path) -> Path:
    other = tmp_path / "other"
    other.mkdir()
    (other / "README.md").write_text("shared notes\n")
    return other


async def test_add_dir_is_readable_and_read_only_in_the_sandbox(
    calc_repo: Path, tmp_path: Path
) -> None:
    other = _other(tmp_path)
    turns = [
        Turn(tool_calls=[ToolCallSpec("run", {"command": f"cat {other}/README.md"})]),
        Turn(tool_calls=[ToolCallSpec("run", {"command": f"echo x > {other}/new.txt"})]),
        Turn(text="read it"),
    ]
    async with ScriptedModelServer(turns) as server:
        run = await run_cli(
            "--task",
            "read the other folder",
            "--add-dir",
            str(other),
            "--review",
            "--review-action",
            "discard",
            "--format",
            "ndjson",
            server=server,
            cwd=calc_repo,
        )
    assert run.code == 0, (run.stderr, run.stdout[-3000:])
    results = [e for e in run.lines() if e["type"] == "tool_result"]
    assert results[0]["ok"] is True and "shared notes" in results[0]["output"]
    assert results[1]["ok"] is False and "Read-only file system" in results[1]["output"]
    assert not (other / "new.txt").exists()


async def test_add_dir_refusals_are_usage_errors_before_any_request(
    calc_repo: Path, tmp_path: Path
) -> None:
    other = _other(tmp_path)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / ".env").write_text("TOKEN=abc\n")
    cases = [
        ([f"{other}:rw"], "not supported yet"),
        ([str(secret)], "holds secret files (.env)"),
        ([str(calc_repo)], "overlaps the workspace"),
        ([str(tmp_path / "missing")], "not a directory"),
    ]
    for given, message in cases:
        async with ScriptedModelServer([Turn(text="x")]) as server:
            run = await run_cli("--task", "t", "--add-dir", *given, server=server, cwd=calc_repo)
            assert server.requests == []
        assert run.code == 1, run.stderr
        assert message in run.stderr and "Traceback" not in run.stderr
