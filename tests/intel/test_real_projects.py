"""Issue 36 on real projects nobody here wrote: more-itertools (unittest), npm's qs (tape) and
Debian's go-difflib (go test), each with one injected bug (tests/intel/_corpus.py).

The feed must run the project's own tests, name the failing test at its assertion, see it
fixed by the correct patch, and report nothing the project's build does not; ``driveros agent
--fix`` with a scripted model making the correct edit must exit 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driveros.diagnostics import render_snapshot
from driveros.diagnostics._identity import identity_message
from driveros.intel import DiagnosticsFeed
from driveros.sandbox import LocalSandbox
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests.cli.conftest import run_cli
from tests.intel._corpus import MORE_ITERTOOLS, PROJECTS, RealProject
from tests.intel._projects import tool_env


def contained(sandbox: LocalSandbox) -> LocalSandbox:
    """The sandbox, which must contain what it runs (bubblewrap, network off) for the
    project's tests to run by default."""
    assert sandbox.contained, "the local tier cannot contain commands on this machine"
    return sandbox


def _errors(snapshot_items: object) -> list[tuple[str, str]]:
    return [
        (i.code or "", identity_message(i))
        for i in snapshot_items  # type: ignore[attr-defined]
        if i.severity == "error"
    ]


@pytest.mark.parametrize("project", PROJECTS, ids=[p.name for p in PROJECTS])
async def test_the_feed_runs_the_projects_tests_and_names_the_failing_one(
    project: RealProject, tmp_path: Path
) -> None:
    root = project.build(tmp_path / "p")
    async with LocalSandbox(root, base_env=tool_env()) as sandbox:
        feed = DiagnosticsFeed(contained(sandbox))  # default settings, untrusted
        first = await feed.snapshot()
        text = render_snapshot(first)
        assert project.check in first.checks, text
        errors = _errors(first.items)
        # the failing test, and nothing else the project's build does not report
        assert ("test-failure", project.failing) in errors, text
        assert {code for code, _ in errors} == {"test-failure"}, text
        failing = next(i for i in first.items if identity_message(i) == project.failing)
        assert failing.source == ("go" if project.check == "go-test" else project.check)
        assert failing.path.startswith(project.path.split("/")[0]) or "test" in failing.path
        assert failing.line > 0  # at its assertion

        await sandbox.edit(project.path, project.bad, project.good)  # the correct patch
        after = await feed.snapshot(changed=[project.path])
    assert _errors(after.items) == [], render_snapshot(after)
    assert "Traceback" not in render_snapshot(after)


async def test_where_the_sandbox_cannot_contain_tests_do_not_run_and_it_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = MORE_ITERTOOLS.build(tmp_path / "p")
    # a tier that cannot contain (the network on, say) answers False
    monkeypatch.setattr(LocalSandbox, "contained", property(lambda _self: False))
    async with LocalSandbox(root, base_env=tool_env()) as sandbox:
        snap = await DiagnosticsFeed(sandbox).snapshot()
    assert "unittest" not in snap.checks
    assert _errors(snap.items) == []
    assert (
        "[driveros] unittest (Makefile:test): tests not run: the sandbox cannot contain "
        "them (no OS sandbox here)" in snap.raw
    )


@pytest.mark.parametrize("project", PROJECTS, ids=[p.name for p in PROJECTS])
async def test_fix_with_the_correct_edit_exits_0(project: RealProject, tmp_path: Path) -> None:
    root = project.build(tmp_path / "p")  # default settings, an untrusted workspace
    turns = [
        Turn(tool_calls=[ToolCallSpec("diagnostics", {})]),
        Turn(
            tool_calls=[
                ToolCallSpec(
                    "edit_file",
                    {"path": project.path, "old_string": project.bad, "new_string": project.good},
                )
            ]
        ),
        Turn(tool_calls=[ToolCallSpec("diagnostics", {})]),
        Turn(text="Fixed the failing test."),
    ]
    async with ScriptedModelServer(turns) as server:
        run = await run_cli(
            "--fix",
            "--format",
            "ndjson",
            "--no-memory",
            server=server,
            cwd=root,
        )
        diagnostics_answer = json.dumps(server.requests[1]["messages"])
    events = run.lines()
    assert run.code == 0, run.stderr
    task = events[0]["task"]
    assert project.failing in task, task
    assert "Traceback" not in run.stderr
    result = events[-1]
    assert (result["outcome"], result["targets_fixed"]) == ("answered", True)
    assert project.failing in diagnostics_answer
    # the run's events show the detected build, with where each check came from
    builds = [e for e in events if e["type"] == "build"]
    assert builds, [e["type"] for e in events]
    origins = {c["name"]: c["origin"] for c in builds[0]["checks"]}
    assert origins.get(project.check), builds[0]
    assert (root / project.path).read_text().count(project.good) == 1


async def test_the_diagnostics_tool_runs_an_unused_linter_on_request_never_a_target(
    tmp_path: Path,
) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "m.py").write_text("import os\n")
    turns = [Turn(tool_calls=[ToolCallSpec("diagnostics", {"tool": "ruff"})]), Turn(text="ok")]
    async with ScriptedModelServer(turns) as server:
        run = await run_cli(
            "--task", "lint m.py", "--format", "ndjson", "--no-memory", server=server, cwd=root
        )
    assert run.code == 0, run.stderr
    (result,) = [e for e in run.lines() if e["type"] == "tool_result"]
    assert "m.py:1:8: warning [ruff F401]" in result["output"], result["output"]
    assert "run on request" in result["output"]
    # and --fix finds nothing to fix: ruff is not the project's build
    async with ScriptedModelServer([Turn(text="unused")]) as server:
        fix = await run_cli("--fix", "--format", "json", "--no-memory", server=server, cwd=root)
    assert fix.code == 0, fix.stderr
    assert "nothing to fix" in fix.stdout + fix.stderr
