"""Diagnostics feed: time to a fresh snapshot after a one-line edit, full re-run vs incremental.

A generated Python project of ~200 files (modules importing each other, a few real errors,
a tests/ directory) is checked with the real tools of this venv (ruff, mypy, pytest
collection) through a LocalSandbox. Each round makes a one-line edit and takes a snapshot:
once with ``full=True`` (every check over the whole workspace, as a harness without an
incremental feed would) and once incrementally (``changed=[path]``), for an edit in a module
no test imports, for one the tests import (pytest reruns the test files importing it: 9 of
the 10 here, through the modules' import chain) and for an edit of one test file (pytest
reruns that file alone). Reported: the medians and their ratios. Not a pass/fail test.

``full=True`` stays cold on purpose (it is the harness without an incremental feed, and
without the feed's warm pytest process); the incremental snapshots run pytest in the warm
process (docs/intel.md, "The warm pytest process"). So that nobody mistakes where the win
comes from, the bench also times the whole pytest suite alone, cold and warm: most of the
"inside tests" gain is the warm start-up, not the selection of test files.

``--corpus`` times the first snapshot on each project of the intel corpus (more-itertools,
qs, go-difflib: tests/intel/_corpus.py, fetched once by scripts/fetch-corpus.sh), default
settings, against the project's own test command run directly on the host (goal: at most
1.5x plus 1 s). Fresh feed and sandbox each round, so the first snapshot pays the sandbox's
start, the plan's probe and every check (the project's tests among them).

``--server`` times the type check after a one-line edit on the same generated project
configured for basedpyright (``[tool.basedpyright]``): the CLI check (``basedpyright
--outputjson`` over the project) against the warm language server the semantic tools run
(docs/intel.md, "The warm language server"), for an edit of a leaf module (1 file asked) and
of one ten modules import through the chain (11 files asked); and what a cold server costs
before its first answer, against which the feed weighs starting one (``START_AFTER_S``).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench._results import Row, ratio, report
from driveros.intel import DiagnosticsFeed
from driveros.sandbox import LocalSandbox, scrub_env

MODULES = 190
TESTS = 10
ROUNDS = 3


def venv_env() -> dict[str, str]:
    """This process's environment with this venv's bin first on PATH (its ruff, mypy, pytest,
    basedpyright); the sandbox passes on only what a command may see."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def corpus_env() -> dict[str, str]:
    """The environment of ``--corpus`` (its sandboxes and its baseline): the tests' tool
    environment without secrets (provider keys, tokens...). The baseline runs each corpus
    project's own test command on the host, uncontained: its code never sees a key."""
    from tests.intel._projects import tool_env

    return scrub_env(tool_env())


def generate(root: Path) -> None:
    pkg = root / "app"
    pkg.mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "bench"\nversion = "0"\n\n[tool.ruff.lint]\nselect = ["E", "F"]\n'
        '\n[tool.pytest.ini_options]\npythonpath = ["."]\n'
    )
    (pkg / "__init__.py").write_text("")
    for n in range(MODULES):
        dep = f"from app.mod_{n - 1:03d} import value_{n - 1:03d}\n" if n else ""
        base = f"value_{n - 1:03d}(x)" if n else "x"
        body = [
            dep,
            "\n",
            f"def value_{n:03d}(x: int) -> int:\n",
            f"    return {base} + {n}\n",
            "\n\n",
            f"class Thing{n:03d}:\n",
            "    def __init__(self, name: str) -> None:\n",
            "        self.name = name\n",
            "\n",
            "    def label(self) -> str:\n",
            f'        return f"{{self.name}}-{n}"\n',
        ]
        if n % 40 == 7:  # a few real problems for the tools to find
            body.append(f"\n\nBROKEN_{n}: int = 'not an int'\n")
        (pkg / f"mod_{n:03d}.py").write_text("".join(body))
    tests = root / "tests"
    tests.mkdir()
    for n in range(TESTS):
        (tests / f"test_mod_{n:02d}.py").write_text(
            f"from app.mod_{n * 10:03d} import value_{n * 10:03d}\n\n\n"
            f"def test_value_{n}() -> None:\n    assert value_{n * 10:03d}(0) >= 0\n"
        )


async def measure() -> None:
    env = venv_env()
    with tempfile.TemporaryDirectory(prefix="bench-intel-") as tmp:
        root = Path(tmp) / "ws"
        generate(root)
        files = sum(1 for _ in root.rglob("*.py"))
        async with LocalSandbox(root, base_env=env) as sandbox:
            feed = DiagnosticsFeed(sandbox)
            t0 = time.perf_counter()
            first = await feed.snapshot()
            cold = time.perf_counter() - t0
            print(f"project: {files} Python files; checks: {', '.join(first.checks)}")
            print(f"first snapshot (cold tool caches): {cold:.2f}s, {len(first.items)} diagnostics")

            results: dict[str, tuple[float, float]] = {}
            # mod_100 is outside the tests' imports (pytest's result stands); mod_010 is inside
            # a test file edit reruns that test file alone (the other test files' results stand)
            for label, target in (
                ("outside tests", "app/mod_100.py"),
                ("inside tests", "app/mod_010.py"),
                ("of a test file", "tests/test_mod_05.py"),
            ):
                results[label] = await rounds(feed, sandbox, target, label)
            await feed.snapshot()  # settle after the last restore
            t0 = time.perf_counter()
            await feed.snapshot()
            noop = time.perf_counter() - t0
            suite = await whole_suite(feed, sandbox)
    for label, (full, inc) in results.items():
        print(f"one-line edit {label}: full re-run median {full:.3f}s, incremental {inc:.3f}s")
        print(f"ratio full/incremental ({label}): {full / inc:.2f}x")
        print(f"ratio incremental/full ({label}): {inc / full:.2f}x")
    print(f"nothing changed (all cached): {noop:.3f}s")
    cold_suite, warm_suite = suite
    print(
        f"pytest whole suite alone: cold {cold_suite:.3f}s, warm {warm_suite:.3f}s "
        f"(warm/cold {warm_suite / cold_suite:.2f}x)"
    )
    rows = [
        Row(
            benchmark=f"intel one-line edit {label}, incremental (warm pytest process) vs full "
            f"cold re-run, {files}-file generated project"
            + (" (`make bench ARGS=intel`)" if i == 0 else " (same run)"),
            measured=f"{inc:.2f} s",
            baseline=f"{full:.2f} s full",
            ratio=ratio(inc, full),
        )
        for i, (label, (full, inc)) in enumerate(results.items())
    ]
    rows.append(
        Row(
            benchmark="intel pytest's whole suite, warm process vs cold (same run)",
            measured=f"{warm_suite:.2f} s",
            baseline=f"{cold_suite:.2f} s cold",
            ratio=ratio(warm_suite, cold_suite),
        )
    )
    report("intel", rows)


async def whole_suite(feed: DiagnosticsFeed, sandbox: LocalSandbox) -> tuple[float, float]:
    """Median seconds of the whole pytest suite (the check's own command), cold and warm."""
    spec = next(c for c in feed.checks if c.name == "pytest")
    warm = await feed._warm.command(spec, "")  # the feed's own warm process
    assert warm is not None, feed._warm.disabled
    cold_times: list[float] = []
    warm_times: list[float] = []
    for _ in range(ROUNDS):
        for command, times in ((spec.command, cold_times), (warm, warm_times)):
            t0 = time.perf_counter()
            await sandbox.run(command, timeout=300)
            times.append(time.perf_counter() - t0)
    return statistics.median(cold_times), statistics.median(warm_times)


async def rounds(
    feed: DiagnosticsFeed, sandbox: LocalSandbox, target: str, label: str
) -> tuple[float, float]:
    original = await sandbox.read_file(target)
    number = target.removeprefix("app/mod_").removesuffix(".py").lstrip("0") or "0"
    old = ">= 0\n" if target.startswith("tests/") else f"+ {number}\n"
    full_times: list[float] = []
    inc_times: list[float] = []
    edits = 0
    for r in range(ROUNDS):
        for mode, times in (("full", full_times), ("incremental", inc_times)):
            edits += 1  # every edit is new content: no cache can answer it
            edited = original.replace(old, f"{old[:-1]} + {edits}\n")
            assert edited != original
            await sandbox.write_file(target, edited)
            t0 = time.perf_counter()
            if mode == "full":
                await feed.snapshot(full=True)
            else:
                await feed.snapshot(changed=[target])
            times.append(time.perf_counter() - t0)
            detail = ", ".join(f"{c.name}:{c.mode} {c.duration_ms / 1000:.2f}s" for c in feed.runs)
            print(f"  {label} round {r + 1} {mode:<11} {times[-1]:.3f}s  ({detail})")
    await sandbox.write_file(target, original)
    return statistics.median(full_times), statistics.median(inc_times)


#: The project's own test command, as its declared build runs it (run directly, on the host).
CORPUS_COMMANDS = {
    "more-itertools": ["python3", "-m", "unittest"],
    "qs": ["./node_modules/.bin/tape", "test/**/*.js"],
    "go-difflib": ["go", "test", "./..."],
}


async def corpus() -> None:
    import subprocess

    import pytest
    from tests.intel._corpus import PROJECTS

    env = corpus_env()
    corpus_rows: list[Row] = []
    for project in PROJECTS:
        with tempfile.TemporaryDirectory(prefix="bench-corpus-") as tmp:
            try:
                root = project.build(Path(tmp) / "p")
            except pytest.skip.Exception as exc:
                print(f"{project.name}: skipped ({exc})")
                continue
            command = CORPUS_COMMANDS[project.name]
            subprocess.run(command, cwd=root, env=env, capture_output=True)  # warm OS caches
            direct: list[float] = []
            first: list[float] = []
            for _ in range(ROUNDS):
                t0 = time.perf_counter()
                subprocess.run(command, cwd=root, env=env, capture_output=True)
                direct.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                async with LocalSandbox(root, base_env=env) as sandbox:
                    feed = DiagnosticsFeed(sandbox)
                    snap = await feed.snapshot()
                first.append(time.perf_counter() - t0)
                runs = ", ".join(f"{r.name} {r.duration_ms / 1000:.2f}s" for r in feed.runs)
                print(f"  {project.name}: first snapshot {first[-1]:.2f}s ({runs})")
            d, f = statistics.median(direct), statistics.median(first)
            failing = sum(i.code == "test-failure" for i in snap.items)
            goal = "met" if f <= 1.5 * d + 1.0 else "not met"
            print(
                f"{project.name}: first snapshot median {f:.2f}s vs `{' '.join(command)}` "
                f"directly {d:.2f}s: {f / d:.2f}x (+{f - d:.2f}s); goal <= 1.5x + 1s: {goal}; "
                f"{failing} failing test(s) reported"
            )
            corpus_rows.append(
                Row(
                    benchmark=f"intel first snapshot, {project.name} with one bug, default "
                    f"settings, contained ({failing} failing test(s) reported; "
                    "`make bench ARGS=intel --corpus`)",
                    measured=f"{f:.2f} s",
                    baseline=f"{d:.2f} s `{' '.join(command)}` directly",
                    ratio=f"{f / d:.2f} ({f - d:+.2f} s)",
                    goal=f"<= 1.5x + 1 s: {goal}",
                )
            )
    report("intel-corpus", corpus_rows)


async def server() -> None:
    from driveros.intel import IntelConfig
    from driveros.semantic import SemanticTools, server_mounts, warm_diagnostics

    env = venv_env()
    config = IntelConfig(tests="off", disable=("ruff", "compileall"))
    with tempfile.TemporaryDirectory(prefix="bench-intel-server-") as tmp:
        root = Path(tmp) / "ws"
        generate(root)
        with (root / "pyproject.toml").open("a") as f:
            f.write('\n[tool.basedpyright]\ntypeCheckingMode = "standard"\n')
        async with LocalSandbox(root, base_env=env, read_only=server_mounts()) as sandbox:
            off = {"language_server_checks": "off"}
            cli = DiagnosticsFeed(sandbox, config=config.model_copy(update=off))
            warm = DiagnosticsFeed(sandbox, config=config)
            t0 = time.perf_counter()
            first = await cli.snapshot()
            print(
                f"checks: {', '.join(first.checks)} ({cli.checks[0].command}); "
                f"first CLI snapshot {time.perf_counter() - t0:.2f}s"
            )
            await warm.snapshot()
            tools = SemanticTools(sandbox)
            warm.use_language_servers(tools)
            t0 = time.perf_counter()
            await tools.hover("app/mod_000.py", 3, 5, None)
            start = time.perf_counter() - t0
            print(f"cold server: start, index and first answer {start:.2f}s")
            results = {}
            for label, target in (
                ("a leaf module", "app/mod_189.py"),
                ("a module 10 others import", "app/mod_179.py"),
            ):
                original = await sandbox.read_file(target)
                times: dict[str, list[float]] = {"cli": [], "server": []}
                edits = 0
                for r in range(ROUNDS + 2):
                    for name, feed in (("cli", cli), ("server", warm)):
                        edits += 1
                        await sandbox.write_file(target, original + f"\nEDIT_{edits}: int = 1\n")
                        t0 = time.perf_counter()
                        await feed.snapshot(changed=[target])
                        times[name].append(time.perf_counter() - t0)
                        (run,) = [c for c in feed.runs if c.name == "pyright"]
                        print(
                            f"  {label} round {r + 1} {name:<6} {times[name][-1]:.3f}s "
                            f"({run.mode}, {len(run.files)} files)"
                        )
                await sandbox.write_file(target, original)
                results[label] = (
                    statistics.median(times["cli"]),
                    statistics.median(times["server"]),
                )
            await tools.aclose()
            await warm.aclose()
            # a server started for the check: start, index, the deepest module's diagnostics
            cold_tools = SemanticTools(sandbox)
            t0 = time.perf_counter()
            await cold_tools.symbols(None, "app/mod_189.py")
            await warm_diagnostics(cold_tools, sandbox, ["app/mod_189.py"], timeout=120)
            cold_check = time.perf_counter() - t0
            await cold_tools.aclose()
    leaf_cli, leaf = results["a leaf module"]
    mid_cli, mid = results["a module 10 others import"]
    report(
        "intel-server",
        [
            Row(
                benchmark="intel diagnostics after a 1-line edit: warm server vs the CLI check, "
                "edit of a leaf module (`python -m bench.bench_intel --server`: 200-module "
                "project, basedpyright; the server asked about 1 file)",
                measured=f"{leaf * 1000:.0f} ms warm basedpyright-langserver",
                baseline=f"{leaf_cli:.2f} s `basedpyright --outputjson` over the project",
                ratio=ratio(leaf, leaf_cli, 3),
                goal="none",
            ),
            Row(
                benchmark="intel diagnostics after a 1-line edit: warm server vs the CLI "
                "check, edit of a module 10 others import (same run; 11 files asked)",
                measured=f"{mid * 1000:.0f} ms warm server",
                baseline=f"{mid_cli:.2f} s CLI check",
                ratio=ratio(mid, mid_cli, 3),
                goal="none",
            ),
            Row(
                benchmark="intel cold basedpyright started for the check: start, indexing and "
                "the diagnostics of the module importing all others (same run)",
                measured=f"{cold_check:.2f} s (start and first hover: {start:.2f} s)",
                baseline=f"{leaf_cli:.2f} s one CLI check",
                ratio=ratio(cold_check, leaf_cli),
                goal="why the feed starts one only after a CLI check over 3 s (START_AFTER_S)",
            ),
        ],
    )


def main() -> None:
    if "--corpus" in sys.argv[1:]:
        asyncio.run(corpus())
        return
    if "--server" in sys.argv[1:]:
        asyncio.run(server())
        return
    asyncio.run(measure())


if __name__ == "__main__":
    main()
