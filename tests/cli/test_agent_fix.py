"""``driveros agent --fix [PATH…]``: the build's current errors become the run's targets."""

from __future__ import annotations

from pathlib import Path

import pytest

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from .conftest import run_cli

TYPED_BAD = "def add(a: int, b: int) -> int:\n    return a + b\n\n\nx: str = add(1, 2)\n"
TYPED_GOOD = "def add(a: int, b: int) -> int:\n    return a + b\n\n\nx: int = add(1, 2)\n"
SYNTAX_BAD = "def broken(:\n    pass\n"
SYNTAX_GOOD = "def broken() -> None:\n    pass\n"


@pytest.fixture
def broken_project(tmp_path: Path) -> Path:
    """A syntax error (ruff sees it) and a failing type check (mypy checks typed.py)."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        '[project]\nname = "p"\nversion = "0"\n\n[tool.mypy]\nstrict = true\nfiles = ["typed.py"]\n'
    )
    (root / "typed.py").write_text(TYPED_BAD)
    (root / "syn.py").write_text(SYNTAX_BAD)
    return root


FIX_BOTH = [
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "syn.py", "content": SYNTAX_GOOD})]),
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "typed.py", "content": TYPED_GOOD})]),
    Turn(text="Fixed the syntax error and the type error."),
]


async def test_fix_takes_the_build_errors_as_targets_and_exits_0_when_all_are_gone(
    broken_project: Path,
) -> None:
    async with ScriptedModelServer(FIX_BOTH) as server:
        run = await run_cli("--fix", "--format", "ndjson", server=server, cwd=broken_project)
        first_prompt = server.requests[0]["messages"][1]["content"]
    assert run.code == 0, run.stderr
    events = run.lines()
    task = events[0]["task"]
    assert task.startswith("Fix the ")
    assert "syn.py:1:" in task and "[ruff " in task
    assert "typed.py:5:" in task and "[mypy " in task
    assert "typed.py:5:" in first_prompt
    result = events[-1]
    assert result["type"] == "result"
    assert (result["outcome"], result["exit_code"], result["targets_fixed"]) == (
        "answered",
        0,
        True,
    )
    assert result["verified"] is True
    assert (broken_project / "typed.py").read_text() == TYPED_GOOD


async def test_fix_exits_2_when_the_answer_comes_but_a_target_remains(
    broken_project: Path,
) -> None:
    turns = [FIX_BOTH[0], Turn(text="Fixed it.")]  # the type error is left
    async with ScriptedModelServer(turns) as server:
        run = await run_cli(
            "--fix", "--task", "tidy up", "--format", "json", server=server, cwd=broken_project
        )
        first_prompt = server.requests[0]["messages"][1]["content"]
    assert run.code == 2, run.stderr
    assert first_prompt.startswith("tidy up\n\nThe build reports these errors now; fix them:")
    result = run.json()
    assert (result["outcome"], result["exit_code"], result["targets_fixed"]) == (
        "unverified",
        2,
        False,
    )
    assert "target" in result["error"]


async def test_fix_on_given_paths_only_targets_their_errors(broken_project: Path) -> None:
    turns = [FIX_BOTH[1], Turn(text="Typed.")]
    async with ScriptedModelServer(turns) as server:
        run = await run_cli(
            "--fix",
            "typed.py",
            "--format",
            "json",
            server=server,
            cwd=broken_project,
            extra_env={"DRIVEROS_DIAGNOSTICS": "off"},  # --fix keeps the feed that judges it
        )
        first_prompt = server.requests[0]["messages"][1]["content"]
    assert run.code == 0, run.stderr
    assert "typed.py:5:" in first_prompt and "syn.py" not in first_prompt
    assert run.json()["targets_fixed"] is True


@pytest.mark.parametrize("fmt", ["text", "json", "ndjson"])
async def test_fix_with_nothing_to_fix_exits_0_without_a_provider(tmp_path: Path, fmt: str) -> None:
    root = tmp_path / "clean"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    (root / "ok.py").write_text(SYNTAX_GOOD)
    run = await run_cli("--fix", "--format", fmt, server=None, cwd=root)  # no key at all
    assert run.code == 0, run.stderr
    assert "nothing to fix: no errors in the workspace" in run.stderr
    if fmt == "text":
        assert run.stdout.splitlines()[-1].startswith("SUMMARY outcome=answered exit=0")
    else:
        (result,) = run.lines()
        assert result["type"] == "result"
        assert (result["outcome"], result["exit_code"], result["targets_fixed"]) == (
            "answered",
            0,
            True,
        )
        assert result["turns"] == 0


async def test_fix_outside_the_workspace_is_a_usage_error(tmp_path: Path) -> None:
    run = await run_cli("--fix", "/etc", "--format", "json", server=None, cwd=tmp_path)
    assert run.code == 1
    assert run.json()["outcome"] == "setup_error"
    assert "not inside the workspace" in run.stderr
