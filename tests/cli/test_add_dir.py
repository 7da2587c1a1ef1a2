"""``driveros agent --add-dir DIR``: a second folder, read-only in the local sandbox and for the
file tools (by its absolute path); refused when it holds secret files or overlaps the workspace
or another added folder."""

from __future__ import annotations

from pathlib import Path

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from .conftest import run_cli, run_ndjson


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
        run = await run_ndjson(
            "read the other folder",
            *("--add-dir", str(other)),
            server=server,
            cwd=calc_repo,
            review_action="discard",
        )
    assert run.code == 0, (run.stderr, run.stdout[-3000:])
    results = run.events("tool_result")
    assert results[0]["ok"] is True and "shared notes" in results[0]["output"]
    assert results[1]["ok"] is False and "Read-only file system" in results[1]["output"]
    assert not (other / "new.txt").exists()


async def test_add_dir_refusals_are_usage_errors_before_any_request(
    calc_repo: Path, tmp_path: Path
) -> None:
    other = _other(tmp_path)
    (other / "sub").mkdir()
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / ".env").write_text("TOKEN=abc\n")
    cases = [
        ([str(other), "--add-dir", f"{other}/sub:rw"], "overlaps the added folder"),
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


async def test_add_dir_file_tools_read_it_by_its_absolute_path(
    calc_repo: Path, tmp_path: Path
) -> None:
    other = _other(tmp_path)
    (other / "lib").mkdir()
    (other / "lib" / "util.py").write_text("def helper():\n    return 42\n")
    turns = [
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": f"{other}/README.md"})]),
        Turn(tool_calls=[ToolCallSpec("list_files", {"path": str(other)})]),
        Turn(tool_calls=[ToolCallSpec("search", {"pattern": "helper", "path": str(other)})]),
        Turn(
            tool_calls=[
                ToolCallSpec("read_file", {"path": f"{other}/lib/util.py", "offset": 2, "limit": 1})
            ]
        ),
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": f"{other}/lib/gone.py"})]),
        Turn(text="read it"),
    ]
    async with ScriptedModelServer(turns) as server:
        run = await run_ndjson(
            "read the other folder", "--add-dir", str(other), server=server, cwd=calc_repo
        )
    assert run.code == 0, (run.stderr, run.stdout[-3000:])
    results = run.events("tool_result")
    assert [r["ok"] for r in results] == [True] * 4 + [False], results
    assert results[0]["output"] == "shared notes\n"
    assert results[1]["output"] == "README.md\nlib/"
    assert results[2]["output"] == f"{other}/lib/util.py:1: def helper():"
    assert "    return 42" in results[3]["output"]
    # an error names the file as the model must (never a path it would read in the workspace)
    assert f"name it '{other}/lib/gone.py'" in results[4]["output"], results[4]
    # the model is told which folders it has, and how they are named
    system = server.requests[0]["messages"][0]["content"]
    assert f"{other} (read-only)" in system


async def test_add_dir_read_only_refuses_every_change_by_a_tool(
    calc_repo: Path, tmp_path: Path
) -> None:
    other = _other(tmp_path)
    path = f"{other}/README.md"
    turns = [
        Turn(
            tool_calls=[
                ToolCallSpec(
                    "edit_file", {"path": path, "old_string": "shared", "new_string": "mine"}
                )
            ]
        ),
        Turn(tool_calls=[ToolCallSpec("write_file", {"path": f"{other}/new.txt", "content": "x"})]),
        Turn(text="could not"),
    ]
    for review in (None, "keep"):
        async with ScriptedModelServer(turns) as server:
            run = await run_ndjson(
                "edit", "--add-dir", str(other), server=server, cwd=calc_repo, review_action=review
            )
        # every tool was refused: nothing observed, so unverified
        assert run.code == 2, (run.stderr, run.stdout[-3000:])
        results = run.events("tool_result")
        assert [r["ok"] for r in results] == [False, False]
        for result in results:
            assert "read-only added folder" in result["output"], result
    assert (other / "README.md").read_text() == "shared notes\n"
    assert not (other / "new.txt").exists()


async def test_add_dir_symlink_out_of_it_is_refused(calc_repo: Path, tmp_path: Path) -> None:
    other = _other(tmp_path)
    private = tmp_path / "private"
    private.mkdir()
    (private / "notes.txt").write_text("not for the model\n")
    (other / "escape").symlink_to(private)
    (other / "notes.txt").symlink_to(private / "notes.txt")
    turns = [
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": f"{other}/escape/notes.txt"})]),
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": f"{other}/notes.txt"})]),
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": f"{other}/../private/notes.txt"})]),
        Turn(tool_calls=[ToolCallSpec("list_files", {"path": f"{other}/escape"})]),
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": str(private / "notes.txt")})]),
        Turn(text="refused"),
    ]
    async with ScriptedModelServer(turns) as server:
        run = await run_ndjson("escape", "--add-dir", str(other), server=server, cwd=calc_repo)
    assert run.code == 2, (run.stderr, run.stdout[-3000:])
    results = run.events("tool_result")
    assert len(results) == 5
    for result in results:
        assert result["ok"] is False, result
        assert "not for the model" not in result["output"]
        assert "refused" in result["output"], result
