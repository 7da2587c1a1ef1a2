"""Issue 19: after an edit, pytest runs only the test files the edit can affect."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from driveros.diagnostics import DiagnosticItem, diff_snapshots
from driveros.intel import DiagnosticsFeed, IntelConfig
from driveros.intel._imports import ImportGraph
from tests.intel import _projects as P
from tests.intel.conftest import OpenProject

_CFG = IntelConfig(disable=("ruff",), type_checker="off", pytest="run")


def _project(marks: Path) -> dict[str, str]:
    """Three test files; each leaves a marker (outside the workspace) when pytest imports it."""

    def test(name: str, body: str, imports: str) -> str:
        return (
            f"import pathlib\n\n{imports}\n\n"
            f"pathlib.Path({str(marks)!r}, {name!r}).touch()\n\n\n{body}"
        )

    return {
        "pyproject.toml": P.RUFF_CONFIG + '\n[tool.pytest.ini_options]\npythonpath = ["."]\n',
        "app/__init__.py": "",
        "app/a.py": "def one() -> int:\n    return 1\n",
        "app/b.py": "from app.a import one\n\n\ndef two() -> int:\n    return one() + 1\n",
        "app/c.py": "def three() -> int:\n    return 3\n",
        "tests/conftest.py": "",
        "tests/test_a.py": test(
            "test_a", "def test_one() -> None:\n    assert one() == 1\n", "from app.a import one"
        ),
        "tests/test_b.py": test(
            "test_b", "def test_two() -> None:\n    assert two() == 2\n", "from app.b import two"
        ),
        # fails: the unselected failure that must not read as fixed
        "tests/test_c.py": test(
            "test_c",
            "def test_three() -> None:\n    assert three() == 4\n",
            "from app.c import three",
        ),
    }


def _marks(tmp_path: Path) -> Path:
    """Inside the workspace (the sandbox writes nowhere else), in a dot-directory the
    feed's scan leaves out."""
    marks = tmp_path / "ws" / ".marks"
    marks.mkdir(parents=True)
    return marks


def _ran(marks: Path) -> set[str]:
    names = {p.name for p in marks.iterdir()}
    for p in marks.iterdir():
        p.unlink()
    return names


def _pytest_run(feed: DiagnosticsFeed) -> tuple[str, tuple[str, ...]]:
    run = next(r for r in feed.runs if r.name == "pytest")
    return run.mode, run.files


def _failures(items: Sequence[DiagnosticItem]) -> list[str]:
    return sorted(i.message.split(": ")[0] for i in items)


async def test_edit_runs_only_the_tests_importing_the_module(
    open_project: OpenProject, tmp_path: Path
) -> None:
    marks = _marks(tmp_path)
    async with open_project(_project(marks)) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=_CFG)
        first = await feed.snapshot()
        assert _ran(marks) == {"test_a", "test_b", "test_c"}  # the baseline is the full suite
        assert _pytest_run(feed) == ("full", ())
        assert _failures(first.items) == ["tests/test_c.py::test_three"]

        # app/a.py: test_a imports it, test_b through app/b.py; test_c does not, but it
        # failed before, and every test that failed before runs again
        await sandbox.write_file("app/a.py", "def one() -> int:\n    return 2\n")
        second = await feed.snapshot(changed=["app/a.py"])
        assert _ran(marks) == {"test_a", "test_b", "test_c"}
        assert _pytest_run(feed) == (
            "files",
            ("tests/test_a.py", "tests/test_b.py", "tests/test_c.py"),
        )
        delta = diff_snapshots(first, second)
        # test_c still fails: never reported fixed
        assert delta.fixed == ()
        assert _failures(delta.new) == ["tests/test_a.py::test_one", "tests/test_b.py::test_two"]
        assert _failures(second.items) == [
            "tests/test_a.py::test_one",
            "tests/test_b.py::test_two",
            "tests/test_c.py::test_three",
        ]

        # fixing it again: the two selected failures are fixed, test_c's stays
        await sandbox.write_file("app/a.py", "def one() -> int:\n    return 1  # back\n")
        third = await feed.snapshot(changed=["app/a.py"])
        assert _ran(marks) == {"test_a", "test_b", "test_c"}
        delta = diff_snapshots(second, third)
        assert _failures(delta.fixed) == ["tests/test_a.py::test_one", "tests/test_b.py::test_two"]
        assert _failures(third.items) == ["tests/test_c.py::test_three"]

        # a changed test file runs by itself
        await sandbox.edit("tests/test_c.py", "three() == 4", "three() == 3")
        fourth = await feed.snapshot(changed=["tests/test_c.py"])
        assert _ran(marks) == {"test_c"}
        assert _pytest_run(feed) == ("files", ("tests/test_c.py",))
        assert fourth.items == ()


async def test_whole_suite_when_the_selection_is_uncertain(
    open_project: OpenProject, tmp_path: Path
) -> None:
    marks = _marks(tmp_path)
    every = {"test_a", "test_b", "test_c"}
    async with open_project(_project(marks)) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=_CFG)
        await feed.snapshot()
        _ran(marks)

        # a conftest applies to every test below it
        await sandbox.write_file("tests/conftest.py", "# changed\n")
        await feed.snapshot(changed=["tests/conftest.py"])
        assert _ran(marks) == every
        assert _pytest_run(feed) == ("full", ())

        # tests may read any file
        await sandbox.write_file("app/data.json", "{}\n")
        await feed.snapshot(changed=["app/data.json"])
        assert _ran(marks) == every

        # pytest's configuration
        await sandbox.edit("pyproject.toml", 'pythonpath = ["."]', 'pythonpath = [".", "app"]')
        await feed.snapshot(changed=["pyproject.toml"])
        assert _ran(marks) == every

        # a module a conftest imports reaches every test
        await sandbox.write_file("tests/conftest.py", "from app.c import three  # noqa: F401\n")
        await feed.snapshot(changed=["tests/conftest.py"])
        _ran(marks)
        await sandbox.write_file("app/c.py", "def three() -> int:\n    return 33\n")
        await feed.snapshot(changed=["app/c.py"])
        assert _ran(marks) == every

        # a deleted module: its importers are no longer in the graph
        await sandbox.remove("app/b.py")
        gone = await feed.snapshot(changed=["app/b.py"])
        assert _pytest_run(feed) == ("full", ())
        assert _ran(marks) == {"test_a", "test_c"}  # test_b fails before its marker
        assert [(i.path, i.code) for i in gone.items] == [("tests/test_b.py", "collection-error")]


async def test_dynamic_import_in_a_test_runs_the_whole_suite(
    open_project: OpenProject, tmp_path: Path
) -> None:
    marks = _marks(tmp_path)
    files = _project(marks)
    files["tests/test_dyn.py"] = (
        "import importlib\n\n\ndef test_dyn() -> None:\n"
        "    assert importlib.import_module('app.c').three() == 3\n"
    )
    async with open_project(files) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=_CFG)
        await feed.snapshot()
        _ran(marks)
        await sandbox.write_file("app/a.py", "def one() -> int:\n    return 1  # edit\n")
        await feed.snapshot(changed=["app/a.py"])
        assert _ran(marks) == {"test_a", "test_b", "test_c"}
        assert _pytest_run(feed) == ("full", ())


async def test_dependents_follow_imports_backwards(open_project: OpenProject) -> None:
    files = {
        "tests/test_a.py": "from app.core import f\n",
        "tests/test_u.py": "import app.unrelated\n",
        "app/__init__.py": "",
        "app/core.py": "from .helpers import h\n",
        "app/helpers.py": "X = 1\n",
        "app/unrelated.py": "Y = 2\n",
    }
    async with open_project(files) as sandbox:
        graph = ImportGraph()
        assert await graph.update(sandbox, {p: str(len(t)) for p, t in files.items()})
    assert graph.dependents(["app/helpers.py"]) == {
        "app/helpers.py",
        "app/core.py",
        "tests/test_a.py",
    }
    # a package's __init__ runs for every module below it
    assert graph.dependents(["app/__init__.py"]) == set(files)


async def test_dependents_follow_a_changed_import(open_project: OpenProject) -> None:
    """The graph's edges are resolved once and kept; a changed or removed file renews them."""
    files = {
        "tests/test_a.py": "from app.core import f\n",
        "app/__init__.py": "",
        "app/core.py": "X = 1\n",
        "app/helpers.py": "Y = 2\n",
    }
    async with open_project(files) as sandbox:
        graph = ImportGraph()
        assert await graph.update(sandbox, {p: "1" for p in files})
        assert graph.dependents(["app/helpers.py"]) == {"app/helpers.py"}
        await sandbox.write_file("app/core.py", "from .helpers import h\n")
        assert await graph.update(sandbox, {**{p: "1" for p in files}, "app/core.py": "2"})
        assert graph.dependents(["app/helpers.py"]) == {
            "app/helpers.py",
            "app/core.py",
            "tests/test_a.py",
        }
        assert graph.closure(["tests/test_a.py"]) == {
            "tests/test_a.py",
            "app/__init__.py",
            "app/core.py",
            "app/helpers.py",
        }
        gone = {p: "1" for p in files if p != "app/helpers.py"}
        assert await graph.update(sandbox, {**gone, "app/core.py": "2"})
        assert graph.dependents(["app/core.py"]) == {"app/core.py", "tests/test_a.py"}
        assert "app/helpers.py" not in (graph.closure(["tests/test_a.py"]) or set())
