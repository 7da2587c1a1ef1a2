"""Issue 27 rows 1-4 through ``driveros agent``: the local tier is a fence, not a sandbox.

Each row runs a hostile ``conftest.py`` (tests/security/_containment.py) through the CLI
with a scripted model, on the local tier with its defaults. The attacker must receive
nothing, the directory outside the workspace must stay empty, the key must appear nowhere,
the user's tree must be unchanged after a discarded review, and the tests must still run.
A control run of the same conftest on the host (no sandbox) shows the attack is real.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests._scripted import calc_repo as calc_repo  # the fixture
from tests.cli.conftest import SECRET, run_cli
from tests.cli.conftest import git_repo as git_repo  # the fixture
from tests.security._containment import Attacker, hostile_conftest

PYTEST = ToolCallSpec("run", {"command": "python3 -m pytest -q -p no:cacheprovider"})
DIAGNOSTICS = ToolCallSpec("diagnostics", {})


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    return outside


def _assert_contained(
    attacker: Attacker, outside: Path, *texts: str, workspace: Path | None = None
) -> None:
    assert attacker.requests == []  # no network
    assert sorted(p.name for p in outside.iterdir()) == []  # nothing written outside
    for text in texts:
        assert SECRET not in text
    if workspace is not None:  # the tests themselves ran, inside the workspace
        assert (workspace / "conftest_ran.txt").read_text() == "ran"


def test_containment_control_the_conftest_escapes_on_the_host(tmp_path: Path) -> None:
    """Without the sandbox the same conftest reads the key, writes outside, reaches out."""
    outside = _outside(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "test_ok.py").write_text("def test_ok():\n    pass\n")
    with Attacker().running() as attacker:
        (ws / "conftest.py").write_text(hostile_conftest(outside=outside, url=attacker.url))
        env = {"PATH": "/usr/bin:/bin", "CONTROL_API_KEY": "sk-control-4242"}
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
            cwd=ws,
            env=env,
            capture_output=True,
            check=False,
            timeout=120,
        )
    assert (outside / "written.txt").exists()
    assert attacker.requests and b"sk-control-4242" in attacker.requests[0]


async def test_containment_model_conftest_and_allowlisted_pytest(
    calc_repo: Path, tmp_path: Path
) -> None:
    outside = _outside(tmp_path)
    with Attacker().running() as attacker:
        write = ToolCallSpec(
            "write_file",
            {
                "path": "conftest.py",
                "content": hostile_conftest(outside=outside, url=attacker.url),
            },
        )
        turns = [Turn(tool_calls=[write]), Turn(tool_calls=[PYTEST]), Turn(text="done")]
        async with ScriptedModelServer(turns) as server:
            res = await run_cli(
                "--task", "t", "--format", "ndjson", "--approve", "policy",
                server=server, cwd=calc_repo,
            )  # fmt: skip
    assert res.code in (0, 2), res.stderr
    results = [e for e in res.lines() if e["type"] == "tool_result"]
    assert any("passed" in json.dumps(e) or "failed" in json.dumps(e) for e in results)
    _assert_contained(attacker, outside, res.stdout, res.stderr, workspace=calc_repo)


@pytest.mark.parametrize("row", ["row2_model_conftest", "row3_repository_conftest_never"])
async def test_containment_rows2_3_the_diagnostics_feed(
    calc_repo: Path, tmp_path: Path, row: str
) -> None:
    outside = _outside(tmp_path)
    with Attacker().running() as attacker:
        conftest = hostile_conftest(outside=outside, url=attacker.url)
        if row.startswith("row2"):
            write = ToolCallSpec("write_file", {"path": "conftest.py", "content": conftest})
            turns = [Turn(tool_calls=[write]), Turn(tool_calls=[DIAGNOSTICS]), Turn(text="ok")]
            approve = "policy"
        else:
            (calc_repo / "conftest.py").write_text(conftest)
            turns = [Turn(tool_calls=[DIAGNOSTICS]), Turn(text="ok")]
            approve = "never"
        async with ScriptedModelServer(turns) as server:
            res = await run_cli(
                "--task", "t", "--format", "ndjson", "--approve", approve,
                server=server, cwd=calc_repo,
            )  # fmt: skip
    assert res.code in (0, 2), res.stderr
    if row.startswith("row2"):
        _assert_contained(attacker, outside, res.stdout, res.stderr, workspace=calc_repo)
        return
    # --approve never is read-only everywhere: the tests ran (pytest's report), and the
    # conftest's marker went with the sandbox's discarded writes.
    _assert_contained(attacker, outside, res.stdout, res.stderr)
    [found] = [e for e in res.lines() if e["type"] == "tool_result"]
    assert "pytest" in json.dumps(found), found
    assert not (calc_repo / "conftest_ran.txt").exists()


async def test_containment_discarded_review_leaves_the_tree(git_repo: Path, tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    (git_repo / ".gitignore").write_text("__pycache__/\n.env\n")
    (git_repo / ".env").write_text("DB_PASSWORD=hunter2-row4\n")
    before = {p.name: p.read_bytes() for p in git_repo.iterdir() if p.is_file()}
    with Attacker().running() as attacker:
        write = ToolCallSpec(
            "write_file",
            {
                "path": "conftest.py",
                "content": hostile_conftest(outside=outside, url=attacker.url),
            },
        )
        turns = [Turn(tool_calls=[write]), Turn(tool_calls=[PYTEST]), Turn(text="done")]
        async with ScriptedModelServer(turns) as server:
            res = await run_cli(
                "--task", "t", "--format", "ndjson", "--approve", "policy",
                "--review", "--review-action", "discard",
                server=server, cwd=git_repo,
            )  # fmt: skip
    assert res.code in (0, 2), res.stderr
    after = {p.name: p.read_bytes() for p in git_repo.iterdir() if p.is_file()}
    assert after == before  # calc.py not appended to, no conftest, no marker
    assert "hunter2-row4" not in res.stdout + res.stderr
    _assert_contained(attacker, outside, res.stdout, res.stderr)
    # the tests ran in the view: pytest's report reached the model
    results = [json.dumps(e) for e in res.lines() if e["type"] == "tool_result"]
    assert any("passed" in r or "failed" in r for r in results), results
