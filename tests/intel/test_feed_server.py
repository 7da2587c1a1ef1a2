"""The warm language server as the feed's type check (docs/intel.md, "The warm language
server"): real basedpyright, its CLI and its language server, in the local sandbox."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import NamedTuple

import pytest
import pytest_asyncio

from driveros.diagnostics import DiagnosticItem, DiagnosticsSnapshot
from driveros.intel import DiagnosticsFeed, IntelConfig, _feed_server
from driveros.sandbox import LocalSandbox
from driveros.semantic import SemanticTools, ServerSpec, server_mounts
from tests.intel._projects import tool_env, write_project
from tests.semantic._oracle import program

pytestmark = pytest.mark.asyncio

CALC = "def total(items: list[int]) -> int:\n    return sum(items)\n"
MAIN = 'from pkg.calc import total\n\nlabel = "é中😀"; n: int = total([1, 2])\n'
USES = "from pkg.calc import total\n\nm: int = total([3])\n"
# an error the edits never touch: it must be carried over, never re-asked
OTHER = 'x: int = "not an int"\n'
FILES = {
    "pyproject.toml": '[tool.basedpyright]\ntypeCheckingMode = "standard"\n',
    "pkg/__init__.py": "",
    "pkg/calc.py": CALC,
    "main.py": MAIN,
    "uses.py": USES,
    "other.py": OTHER,
}
CONFIG = IntelConfig(tests="off", disable=("ruff", "compileall"))


def _types(snap: DiagnosticsSnapshot) -> list[DiagnosticItem]:
    return [i for i in snap.items if i.source == "pyright"]


def _mode(feed: DiagnosticsFeed) -> tuple[str, tuple[str, ...]]:
    (run,) = [r for r in feed.runs if r.name == "pyright"]
    return run.mode, run.files


async def _cli(sandbox: LocalSandbox) -> list[DiagnosticItem]:
    """What the CLI check says about the same state (a feed of its own, full run)."""
    return _types(await DiagnosticsFeed(sandbox, config=CONFIG).snapshot(full=True))


@pytest_asyncio.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[LocalSandbox]:
    program("basedpyright")
    root = write_project(tmp_path / "ws", FILES)
    async with LocalSandbox(root, base_env=tool_env(), read_only=server_mounts()) as box:
        yield box


async def _warm(sandbox: LocalSandbox, feed: DiagnosticsFeed) -> SemanticTools:
    tools = SemanticTools(sandbox)
    feed.use_language_servers(tools)
    await tools.hover("main.py", 1, 23, None)  # the model used a semantic tool: warm
    return tools


class _Warm(NamedTuple):
    feed: DiagnosticsFeed
    tools: SemanticTools
    base: DiagnosticsSnapshot  #: the feed's baseline, taken before the tools were warm


@contextlib.asynccontextmanager
async def _warm_feed(sandbox: LocalSandbox) -> AsyncIterator[_Warm]:
    """A feed with its baseline taken, then the semantic tools warm; both closed after."""
    feed = DiagnosticsFeed(sandbox, config=CONFIG)
    try:
        base = await feed.snapshot()
        tools = await _warm(sandbox, feed)
        try:
            yield _Warm(feed, tools, base)
        finally:
            await tools.aclose()
    finally:
        await feed.aclose()


async def _edit(
    sandbox: LocalSandbox, feed: DiagnosticsFeed, path: str, text: str
) -> DiagnosticsSnapshot:
    """Write ``path`` in the sandbox and take the snapshot told of that change."""
    await sandbox.write_file(path, text)
    return await feed.snapshot(changed=[path])


async def test_feed_server_type_error_has_the_cli_identity(sandbox: LocalSandbox) -> None:
    async with _warm_feed(sandbox) as (feed, tools, base):
        assert feed.checks[0].command.endswith("basedpyright --outputjson")
        assert [i.path for i in _types(base)] == ["other.py"]
        # a type error after non-ASCII text: the column is counted the same way
        broken = MAIN.replace("total([1, 2])", 'total(["a"])')
        await sandbox.write_file("main.py", broken)
        tools.touched(["main.py"])
        after = await feed.snapshot(changed=["main.py"])
        assert _mode(feed) == ("server", ("main.py",))
        got = _types(after)
        assert got == await _cli(sandbox)
        new = [i for i in got if i.path == "main.py"]
        assert [(i.line, i.column, i.code, i.severity) for i in new] == [
            (3, 32, "reportArgumentType", "error")
        ]
        assert "\n\u00a0\u00a0" in new[0].message  # the CLI's continuation lines
        assert after.fingerprint != base.fingerprint
        # the fix clears it: the same snapshot as before the edit
        fixed = await _edit(sandbox, feed, "main.py", MAIN)
        assert _mode(feed)[0] in ("server", "cached")
        assert _types(fixed) == _types(base) == await _cli(sandbox)
        assert fixed.fingerprint == base.fingerprint
        # a new content: the server answers again, same as the CLI
        again = await _edit(sandbox, feed, "main.py", MAIN + "total(1)\n")
        assert _mode(feed) == ("server", ("main.py",))
        assert _types(again) == await _cli(sandbox)


async def test_feed_server_asks_only_the_edited_files_and_their_importers(
    sandbox: LocalSandbox,
) -> None:
    async with _warm_feed(sandbox) as (feed, tools, _):
        # the callers break: errors in files the edit did not touch, found through imports
        changed = CALC.replace("list[int]", "list[str]").replace("sum(", "len(")
        after = await _edit(sandbox, feed, "pkg/calc.py", changed)
        assert _mode(feed) == ("server", ("main.py", "pkg/calc.py", "uses.py"))
        got = _types(after)
        assert got == await _cli(sandbox)
        assert {i.path for i in got} == {"main.py", "uses.py", "other.py"}
        # other.py's error was carried over: the server never opened it
        session = tools.sessions["basedpyright"]
        assert not await session.published("other.py", 0.5)


async def test_feed_server_new_and_deleted_files_go_to_the_cli(sandbox: LocalSandbox) -> None:
    """A new or deleted module changes what imports resolve to: that snapshot is the CLI's,
    and the server, which had the deleted file open, never answers from it afterwards."""
    async with _warm_feed(sandbox) as (feed, _, _):
        await _edit(sandbox, feed, "extra.py", "def g() -> int:\n    return 1\n")
        assert _mode(feed) == ("full", ())
        snap = await _edit(sandbox, feed, "extra.py", 'def g() -> int:\n    return "1"\n')
        assert _mode(feed) == ("server", ("extra.py",))
        assert _types(snap) == await _cli(sandbox)
        # the server opens calc.py (an edit), then it is deleted
        await _edit(sandbox, feed, "pkg/calc.py", CALC + "\n")
        assert _mode(feed) == ("server", ("main.py", "pkg/calc.py", "uses.py"))
        await sandbox.remove("pkg/calc.py")
        gone = await feed.snapshot()
        assert _mode(feed) == ("full", ())
        assert any(i.path == "main.py" for i in _types(gone))  # the import is unresolved
        after = await _edit(sandbox, feed, "main.py", MAIN + "n = 1\n")
        assert _mode(feed) == ("server", ("main.py",))
        assert _types(after) == await _cli(sandbox)
        # back as it was: a cached snapshot, then the server must resolve the import again
        await _edit(sandbox, feed, "pkg/calc.py", CALC + "\n")
        back = await _edit(sandbox, feed, "main.py", MAIN + "n = 2\n")
        assert _mode(feed) == ("server", ("main.py",))
        assert _types(back) == await _cli(sandbox)
        assert not any(i.path == "main.py" for i in _types(back))
        # a module the code imports appears: the server learns it exists
        missing = await _edit(sandbox, feed, "main.py", MAIN + "import helper\n")
        assert [i.code for i in _types(missing) if i.path == "main.py"] == ["reportMissingImports"]
        await _edit(sandbox, feed, "helper.py", "X = 1\n")
        assert _mode(feed) == ("full", ())
        found = await _edit(sandbox, feed, "main.py", MAIN + "import helper\nhelper.X\n")
        assert _mode(feed) == ("server", ("main.py",))
        assert _types(found) == await _cli(sandbox)


async def test_feed_server_never_starts_a_server_for_a_cheap_check_and_honours_off(
    sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the CLI check costs less than a server's start (whatever this machine's load)
    monkeypatch.setattr(_feed_server, "START_AFTER_S", 1e6)
    feed = DiagnosticsFeed(sandbox, config=CONFIG)
    await feed.snapshot()
    tools = SemanticTools(sandbox)
    feed.use_language_servers(tools)  # attached, never used by the model: nothing warm
    for n in range(2):
        snap = await _edit(sandbox, feed, "main.py", MAIN + f"total({n})\n")
        assert _mode(feed) == ("full", ())
    assert tools.sessions == {}
    assert _types(snap) == await _cli(sandbox)

    off = DiagnosticsFeed(
        sandbox, config=CONFIG.model_copy(update={"language_server_checks": "off"})
    )
    await off.snapshot()
    warm = await _warm(sandbox, off)
    try:
        await _edit(sandbox, off, "main.py", MAIN + "total(2)\n")
        assert _mode(off) == ("full", ())
    finally:
        await warm.aclose()


async def test_feed_server_starts_one_when_the_cli_check_costs_more(
    sandbox: LocalSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_feed_server, "START_AFTER_S", 0.0)  # any CLI run costs more
    feed = DiagnosticsFeed(sandbox, config=CONFIG)
    tools = SemanticTools(sandbox)
    feed.use_language_servers(tools)
    try:
        await feed.snapshot()
        assert tools.sessions == {}  # the baseline alone starts nothing: a run may never edit
        first = await _edit(sandbox, feed, "main.py", MAIN + "total(1)\n")
        assert _mode(feed) == ("full", ())  # this one is the CLI's; the server starts aside
        assert _types(first) == await _cli(sandbox)
        async with asyncio.timeout(120):
            while "basedpyright" not in tools.sessions:
                await asyncio.sleep(0.1)
        second = await _edit(sandbox, feed, "main.py", MAIN + "total(2)\n")
        assert _mode(feed) == ("server", ("main.py",))
        assert _types(second) == await _cli(sandbox)
    finally:
        await feed.aclose()
        await tools.aclose()


CRASH = """import os, subprocess, sys
child = subprocess.Popen([{server!r}, "--stdio"], stdin=subprocess.PIPE)
pull = b'"method": "textDocument/' + b'diagnostic"'  # (not this file's own text)
while True:
    data = os.read(0, 65536)
    if not data or pull in data:
        child.kill()
        os._exit(3)
    child.stdin.write(data)
    child.stdin.flush()
"""


async def test_feed_server_crash_mid_run_falls_back_to_the_cli(
    sandbox: LocalSandbox, caplog: pytest.LogCaptureFixture
) -> None:
    """The real server behind a relay that dies when the feed's request arrives."""
    langserver = str(Path(program("basedpyright")).with_name("basedpyright-langserver"))
    await sandbox.write_file(".relay/crash.py", CRASH.format(server=langserver))
    relay = ServerSpec("basedpyright", ("python3", ".relay/crash.py"), ("py",), {"py": "python"})
    feed = DiagnosticsFeed(sandbox, config=CONFIG)
    await feed.snapshot()
    tools = SemanticTools(sandbox, servers=[relay])
    feed.use_language_servers(tools)
    try:
        assert "total" in (await tools.hover("main.py", 3, 26, None)).text
        await sandbox.write_file("main.py", MAIN + "total(1)\n")
        with caplog.at_level(logging.WARNING, logger="driveros.intel"):
            snap = await feed.snapshot(changed=["main.py"])
        assert _mode(feed) == ("full", ())
        assert _types(snap) == await _cli(sandbox)
        assert any(i.path == "main.py" for i in _types(snap))
        (said,) = [r for r in caplog.records if "runs instead" in r.getMessage()]
        assert said.exc_info is None and "basedpyright" in said.getMessage()
        # the server is gone: later snapshots are the CLI's without asking again
        later = await _edit(sandbox, feed, "main.py", MAIN + "total(2)\n")
        assert _mode(feed) == ("full", ())
        assert _types(later) == await _cli(sandbox)
    finally:
        await tools.aclose()
        await feed.aclose()


WRAPPER = """#!/bin/sh
echo "$*" >> "$(dirname "$0")/../calls.log"
exec {real} "$@"
"""


async def test_feed_server_answers_in_an_agent_run_after_a_semantic_tool(tmp_path: Path) -> None:
    """execute_run (the CLI's, the language server's and ACP's path): the model hovers, then
    edits; the edit turn's diagnostics come from the warm server, with the CLI's identity,
    and the CLI runs only for the baseline (and its --version)."""
    from driveros.testing import ToolCallSpec, Turn
    from tests.agent.conftest import run_scripted

    real = program("basedpyright").replace("-langserver", "")
    root = write_project(tmp_path / "ws", FILES)
    wrapper = root / ".venv/bin/basedpyright"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(WRAPPER.format(real=real))
    wrapper.chmod(0o755)
    edit = {"path": "main.py", "old_string": "total([1, 2])", "new_string": 'total(["a"])'}
    turns = [
        Turn(tool_calls=[ToolCallSpec("hover", {"path": "main.py", "line": 1, "column": 23})]),
        Turn(tool_calls=[ToolCallSpec("edit_file", edit)]),
        Turn(text="Done."),
    ]
    out = await run_scripted(turns, root, diagnostics=True, task="break it")
    assert out.report.result.outcome == "answered", out.report.result
    hover = next(e for e in out.of("tool_result") if e.name == "hover")
    assert hover.ok and "total" in hover.output
    (diag,) = [e for e in out.of("diagnostics") if e.turn == 2]
    assert "pyright" in diag.checks
    calls = (root / ".venv/calls.log").read_text().splitlines()
    assert calls == ["--outputjson", "--version"]  # the baseline, then the server answered
    async with LocalSandbox(root, base_env=tool_env(), read_only=server_mounts()) as box:
        cli = [i for i in await _cli(box) if i.path == "main.py"]
    assert [i for i in diag.new if i.source == "pyright"] == cli
    assert [(i.line, i.column, i.code) for i in cli] == [(3, 32, "reportArgumentType")]


async def test_feed_server_another_version_or_an_excluded_file_goes_to_the_cli(
    sandbox: LocalSandbox,
) -> None:
    """The server stands in only for the same program, and only for files the CLI checks."""
    real = program("basedpyright").replace("-langserver", "")
    older = '#!/bin/sh\n[ "$1" = --version ] && { echo "basedpyright 1.0.0"; exit 0; }\n'
    await sandbox.write_file(".venv/bin/basedpyright", older + f'exec {real} "$@"\n')
    await sandbox.run("chmod +x .venv/bin/basedpyright")
    async with _warm_feed(sandbox) as (feed, _, _):
        assert feed.checks[0].command == ".venv/bin/basedpyright --outputjson"
        snap = await _edit(sandbox, feed, "main.py", MAIN + "total(1)\n")
        assert _mode(feed) == ("full", ())  # "basedpyright 1.0.0" is not the server's version
        assert _types(snap) == await _cli(sandbox)
    await sandbox.remove(".venv/bin/basedpyright")
    await sandbox.write_file("pyproject.toml", FILES["pyproject.toml"] + 'exclude = ["gen"]\n')
    await sandbox.write_file("gen/made.py", 'y: int = "generated"\n')
    async with _warm_feed(sandbox) as (feed, _, _):
        snap = await _edit(sandbox, feed, "gen/made.py", 'y: int = "generated again"\n')
        # the server would report the excluded file once opened; the CLI never does
        assert _mode(feed) == ("full", ())
        assert not any(i.path.startswith("gen/") for i in _types(snap))
        snap = await _edit(sandbox, feed, "main.py", MAIN + "total(2)\n")
        assert _mode(feed) == ("server", ("main.py",))
        assert _types(snap) == await _cli(sandbox)


async def test_feed_server_killed_between_edits_falls_back_with_one_warning(
    sandbox: LocalSandbox, caplog: pytest.LogCaptureFixture
) -> None:
    async with _warm_feed(sandbox) as (feed, tools, _):
        await _edit(sandbox, feed, "main.py", MAIN + "total(1)\n")
        assert _mode(feed) == ("server", ("main.py",))
        # the server dies (its processes, by id, inside the sandbox's PID namespace)
        found = await sandbox.run("pgrep -f langserver")
        pids = found.stdout.split()
        assert pids, found
        await sandbox.run(f"kill -9 {' '.join(pids)}")
        session = tools.sessions["basedpyright"]
        async with asyncio.timeout(30):
            while session.client.alive:
                await asyncio.sleep(0.05)
        with caplog.at_level(logging.DEBUG, logger="driveros.intel"):
            for n in (2, 3):
                snap = await _edit(sandbox, feed, "main.py", MAIN + f"total({n})\n")
                assert _mode(feed) == ("full", ())
                assert _types(snap) == await _cli(sandbox)
        said = [r for r in caplog.records if "runs instead" in r.getMessage()]
        assert [r.levelname for r in said] == ["WARNING", "DEBUG"]  # said once, then quiet
        assert "no longer running" in said[0].getMessage()
        assert all(r.exc_info is None for r in caplog.records)
