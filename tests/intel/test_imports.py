"""The static import graph that decides whether pytest can feel an edit."""

from __future__ import annotations

from driveros.intel import CheckSpec, DiagnosticsFeed, IntelConfig
from driveros.intel._imports import ImportGraph, parse_imports
from tests.intel import _projects as P
from tests.intel.conftest import OpenProject


def test_parse_imports_resolves_relative_and_from_imports() -> None:
    src = "import os.path\nfrom . import sibling\nfrom ..core import thing\nfrom pkg.x import *\n"
    info = parse_imports(src, "pkg/sub/mod.py")
    assert info is not None and not info.dynamic
    assert info.modules == {
        "os.path",
        "pkg.sub",
        "pkg.sub.sibling",
        "pkg.core",
        "pkg.core.thing",
        "pkg.x",
    }
    assert parse_imports("def broken(:\n", "x.py") is None


def test_parse_imports_flags_dynamic_imports() -> None:
    for src in ("import importlib\n", "m = __import__(name)\n", "pytest_plugins = ['p']\n"):
        info = parse_imports(src, "conftest.py")
        assert info is not None and info.dynamic, src


def test_parse_imports_reads_a_literal_dunder_import_as_an_import() -> None:
    # more-itertools' more.py: __import__("concurrent.futures") is an ordinary import
    info = parse_imports("e = __import__('concurrent.futures').futures\n", "m.py")
    assert info == parse_imports("import concurrent.futures\n", "m.py")


async def test_import_graph_closure_follows_packages(open_project: OpenProject) -> None:
    files = {
        "tests/test_a.py": "from app.core import f\n",
        "app/__init__.py": "",
        "app/core.py": "from .helpers import h\n",
        "app/helpers.py": "X = 1\n",
        "app/unrelated.py": "Y = 2\n",
        "scripts/dyn.py": "import importlib\n",
    }
    async with open_project(files) as sandbox:
        graph = ImportGraph()
        hashes = {p: str(len(t)) for p, t in files.items()}
        assert await graph.update(sandbox, hashes)
    assert graph.closure(["tests/test_a.py"]) == {
        "tests/test_a.py",
        "app/__init__.py",
        "app/core.py",
        "app/helpers.py",
    }
    assert graph.closure(["scripts/dyn.py"]) is None


def _mode(feed: DiagnosticsFeed, name: str) -> str:
    return next(r.mode for r in feed.runs if r.name == name)


async def test_feed_pytest_skips_edits_no_test_imports(open_project: OpenProject) -> None:
    files = {**P.PYTEST, "tools/report.py": "def report() -> str:\n    return 'r'\n"}
    del files["tests/test_broken.py"]
    async with open_project(files) as sandbox:
        cfg = IntelConfig(disable=("ruff",), type_checker="off", pytest="run")
        feed = DiagnosticsFeed(sandbox, config=cfg)
        first = await feed.snapshot()
        assert [(i.path, i.code) for i in first.items] == [("tests/test_calc.py", "test-failure")]

        await sandbox.write_file("tools/report.py", "def report() -> str:\n    return 'x'\n")
        unaffected = await feed.snapshot(changed=["tools/report.py"])
        assert _mode(feed, "pytest") == "unaffected"
        assert unaffected.fingerprint == first.fingerprint

        await sandbox.edit("calc.py", "return a - b", "return a + b")
        fixed = await feed.snapshot(changed=["calc.py"])
        assert _mode(feed, "pytest") == "files"  # test_calc imports it: run alone
        assert fixed.items == ()

        # a test run reads data files too: any non-Python change reruns it
        await sandbox.write_file("tests/data.txt", "fixture\n")
        await feed.snapshot()
        assert _mode(feed, "pytest") == "full"


async def test_feed_closure_flag_works_for_configured_checks(open_project: OpenProject) -> None:
    marker = CheckSpec(
        name="count", command="echo ran", parser="raw", triggers=("*.py",), pytest_closure=True
    )
    files = {"tests/test_x.py": "import lib\n", "lib.py": "A = 1\n", "other.py": "B = 1\n"}
    async with open_project(files) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=IntelConfig(auto=False, checks=(marker,)))
        await feed.snapshot()
        await sandbox.write_file("other.py", "B = 2\n")
        await feed.snapshot()
        assert feed.runs[0].mode == "unaffected"
        await sandbox.write_file("lib.py", "A = 2\n")
        await feed.snapshot()
        assert feed.runs[0].mode == "full"
