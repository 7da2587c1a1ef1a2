"""A rename through a review run: the proposal is exactly the server's edit, the feed sees
the build still clean; through execute_run (the language server's and ACP's path) and the
CLI (`driveros agent --review`)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.agent.conftest import Outcome
from tests.cli.conftest import run_cli
from tests.runs.conftest import run_scripted
from tests.semantic._oracle import Oracle, program

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

CALC = 'def compute_total(items):\n    """Sum the items."""\n    return sum(items)\n'
USE = (
    "from pkg.calc import compute_total\n\n\n"
    "def twice(items):\n    return 2 * compute_total(items)\n"
)
TEST = (
    "from pkg.calc import compute_total\nfrom pkg.use import twice\n\n\n"
    "def test_total():\n    assert compute_total([1, 2]) == 3\n    assert twice([1]) == 2\n"
)
RENAME = ToolCallSpec("rename", {"symbol": "compute_total", "new_name": "grand_total"})
TURNS = [
    Turn(tool_calls=[RENAME]),
    Turn(tool_calls=[ToolCallSpec("references", {"symbol": "grand_total"})]),
    Turn(text="Renamed."),
]


def project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/__init__.py").write_text("")
    (root / "pkg/calc.py").write_text(CALC)
    (root / "pkg/use.py").write_text(USE)
    (root / "test_calc.py").write_text(TEST)
    return root


async def server_rename(root: Path) -> dict[str, str]:
    """The files basedpyright's own rename changes, and their text after it."""
    copy = root.parent / "oracle"
    shutil.copytree(root, copy)
    async with Oracle("basedpyright", copy) as oracle:
        for rel in ("pkg/calc.py", "pkg/use.py", "test_calc.py"):
            oracle.open(rel)
        return await oracle.rename("pkg/calc.py", 1, 5, "grand_total")


@asynccontextmanager
async def proposed_rename(out: Outcome, root: Path, want: dict[str, str]) -> AsyncIterator[None]:
    """A review run of :data:`TURNS`: answered, its proposal exactly the server's rename
    ``want``, the user's tree untouched, the feed clean after the rename, the references
    after it found; the caller's own checks run inside, then the scratch view is closed."""
    report = out.report
    assert report.scratch is not None
    try:
        assert report.result.outcome == "answered", report.result
        assert {c.path: c.after for c in report.changes} == want
        assert (root / "pkg/calc.py").read_text() == CALC  # the user's tree untouched
        (diag,) = [e for e in out.of("diagnostics") if e.turn == 1]
        assert diag.total == 0 and diag.checks, diag
        refs = next(e for e in out.of("tool_result") if e.name == "references")
        assert refs.ok and refs.output.startswith("5 references to grand_total in 3 files")
        yield
    finally:
        await report.scratch.aclose()


async def test_semantic_rename_in_a_review_run_proposes_the_servers_edit(tmp_path: Path) -> None:
    program("basedpyright")
    root = project(tmp_path / "ws")
    want = await server_rename(root)
    assert sorted(want) == ["pkg/calc.py", "pkg/use.py", "test_calc.py"]
    out = await run_scripted(TURNS, root, review=True, diagnostics=True, task="rename")
    async with proposed_rename(out, root, want):
        calls = [e for e in out.of("tool_result") if e.name == "rename"]
        assert calls[0].ok and "3 files" in calls[0].output
        assert sorted(e.path for e in out.of("edit")) == sorted(want)


async def test_semantic_rename_through_the_cli_review(tmp_path: Path) -> None:
    program("basedpyright")
    root = project(tmp_path / "ws")
    want = await server_rename(root)
    async with ScriptedModelServer(TURNS) as server:
        run = await run_cli(
            "--task",
            "rename",
            "--review",
            "--review-action",
            "keep",
            "--format",
            "json",
            server=server,
            cwd=root,
        )
    assert run.code == 0, run.stderr
    assert run.json()["outcome"] == "answered"
    for rel, text in want.items():
        assert (root / rel).read_text() == text
