"""The semantic tools against real basedpyright in the local sandbox: every answer equals the
server's own (asked directly), symbol resolution and ambiguity, a missing server, a crash,
cancellation, and nothing left running afterwards."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.semantic._checks import (
    EACH_SERVER,
    a_crashed_server_is_restarted,
    answers_follow_the_agents_edits,
    cancellation_keeps_the_server,
    cancelled_before_dispatch_keeps_answering,
)
from tests.semantic._oracle import Oracle, places, program

from driveros.agent._tools import ToolBox
from driveros.sandbox import LocalSandbox
from driveros.semantic import LanguageServerError, SemanticTools, ServerSpec, server_mounts

pytestmark = pytest.mark.asyncio(loop_scope="module")

CALC = '''def compute_total(items: list[int]) -> int:
    """Sum the items."""
    return sum(items)


def helper() -> int:
    return 1


class Cart:
    def total(self) -> int:
        return compute_total([1, 2])
'''
MAIN = """from pkg.calc import Cart, compute_total
from pkg.other import helper

print(compute_total([3, 4]), Cart().total(), helper())
"""
OTHER = "def helper() -> int:\n    return 2\n"


def make_project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/__init__.py").write_text("")
    (root / "pkg/calc.py").write_text(CALC)
    (root / "pkg/other.py").write_text(OTHER)
    (root / "main.py").write_text(MAIN)
    return root


class Setup:
    def __init__(self, root: Path, tools: SemanticTools, sandbox: LocalSandbox) -> None:
        self.root, self.tools, self.sandbox = root, tools, sandbox


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def py(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Setup]:
    program("basedpyright")
    root = make_project(tmp_path_factory.mktemp("py") / "ws")
    async with LocalSandbox(root, read_only=server_mounts()) as sandbox:
        tools = SemanticTools(sandbox)
        yield Setup(root, tools, sandbox)
        await tools.aclose()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def oracle(py: Setup) -> AsyncIterator[Oracle]:
    async with Oracle("basedpyright", py.root) as found:
        for rel in ("main.py", "pkg/calc.py", "pkg/other.py"):
            found.open(rel)
        yield found


async def test_semantic_references_equal_the_servers_own(py: Setup, oracle: Oracle) -> None:
    got = await py.tools.references("main.py", 4, 7, None)
    want = await oracle.references("main.py", 4, 7)
    assert places(got.text) == want
    assert {p for p, _, _ in want} == {"main.py", "pkg/calc.py"}
    assert got.text.startswith("4 references to compute_total in 2 files")
    assert "pkg/calc.py:12:16:         return compute_total([1, 2])" not in got.text
    assert "pkg/calc.py:12:16: return compute_total([1, 2])" in got.text


async def test_semantic_definition_and_hover_equal_the_servers_own(
    py: Setup, oracle: Oracle
) -> None:
    got = await py.tools.definition("main.py", 4, 7, None)
    assert places(got.text) == await oracle.definition("main.py", 4, 7)
    assert places(got.text) == [("pkg/calc.py", 1, 5)]
    hover = await py.tools.hover("main.py", 4, 7, None)
    assert hover.text == await oracle.hover("main.py", 4, 7)
    assert "Sum the items." in hover.text


async def test_semantic_symbol_resolves_like_the_position(py: Setup, oracle: Oracle) -> None:
    by_name = await py.tools.references(None, None, None, "compute_total")
    assert places(by_name.text) == await oracle.references("main.py", 4, 7)
    method = await py.tools.references(None, None, None, "Cart.total")
    assert places(method.text) == await oracle.references("pkg/calc.py", 11, 9)


async def test_semantic_ambiguous_symbol_answers_with_the_candidates(py: Setup) -> None:
    with pytest.raises(LanguageServerError) as caught:
        await py.tools.definition(None, None, None, "helper")
    message = str(caught.value)
    assert "'helper' is ambiguous: 2 symbols" in message
    assert "pkg/calc.py:6:5: function helper" in message
    assert "pkg/other.py:1:5: function helper" in message
    narrowed = await py.tools.definition("pkg/other.py", None, None, "helper")
    assert places(narrowed.text) == [("pkg/other.py", 1, 5)]
    with pytest.raises(LanguageServerError, match="no symbol named 'nowhere'"):
        await py.tools.hover(None, None, None, "nowhere")


async def test_semantic_symbols_query_and_outline(py: Setup) -> None:
    found = await py.tools.symbols("Cart", None)
    assert "pkg/calc.py:10:7: class Cart" in found.text
    outline = await py.tools.symbols(None, "pkg/calc.py")
    lines = outline.text.splitlines()
    assert lines[0] == "outline of pkg/calc.py:"
    assert "1:5 function compute_total" in lines
    assert "10:7 class Cart" in lines
    assert "  11:9 method total" in lines


async def test_semantic_answers_follow_the_agents_edits(py: Setup) -> None:
    await answers_follow_the_agents_edits(py.tools, py.sandbox, py.root)


async def test_semantic_columns_are_characters_not_utf16_units(py: Setup) -> None:
    line = 's = "🙂🙂"; print(compute_total([5]))\n'
    await py.sandbox.write_file("emoji.py", "from pkg.calc import compute_total\n" + line)
    py.tools.touched(["emoji.py"])
    column = line.index("compute_total") + 1
    got = await py.tools.definition("emoji.py", 2, column, None)
    assert places(got.text) == [("pkg/calc.py", 1, 5)]
    refs = await py.tools.references("pkg/calc.py", 1, 5, None)
    assert ("emoji.py", 2, column) in places(refs.text)
    await py.sandbox.remove("emoji.py")
    py.tools.touched(["emoji.py"])


async def test_semantic_cancellation_cancels_the_request_and_keeps_the_server(
    py: Setup,
) -> None:
    await cancellation_keeps_the_server(py.tools)


async def test_semantic_requests_cancelled_before_the_server_reads_them_keep_it_answering(
    py: Setup,
) -> None:
    await cancelled_before_dispatch_keeps_answering(py.tools)


async def test_semantic_a_crashed_server_is_restarted_by_the_next_call(py: Setup) -> None:
    await a_crashed_server_is_restarted(py.tools, py.sandbox)


async def test_semantic_a_server_dying_mid_request_is_the_calls_error(py: Setup) -> None:
    await py.tools.hover("main.py", 4, 7, None)
    session = py.tools.sessions["basedpyright"]
    stopped = await py.sandbox.run(EACH_SERVER + 'kill -STOP "${p#/proc/}"; done; true')
    assert stopped.exit_code == 0
    task = asyncio.ensure_future(py.tools.references("main.py", 4, 7, None))
    while not session.client._pending:  # asked; the stopped server cannot answer
        await asyncio.sleep(0.01)
    await py.sandbox.run(EACH_SERVER + 'kill -9 "${p#/proc/}"; done; true')
    with pytest.raises(LanguageServerError, match=r"basedpyright ended \(exit code"):
        await task
    again = await py.tools.references("main.py", 4, 7, None)  # restarted
    assert len(places(again.text)) == 4


async def test_semantic_missing_server_says_what_to_install(tmp_path: Path) -> None:
    root = make_project(tmp_path / "ws")
    (root / "src").mkdir()
    (root / "src/lib.rs").write_text("fn main() {}\n")
    missing = ServerSpec(
        "nols", ("no-such-langserver", "--stdio"), ("py",), install="pip install nols"
    )
    async with LocalSandbox(root) as sandbox:
        tools = SemanticTools(sandbox, servers=[missing])
        with pytest.raises(
            LanguageServerError, match=r"not installed .*install it: pip install nols"
        ):
            await tools.references("main.py", 4, 7, None)
        with pytest.raises(LanguageServerError, match=r"no language server is configured for \.rs"):
            await tools.hover("src/lib.rs", 1, 1, None)
        box = ToolBox(sandbox)
        box.semantic = tools
        outcome = await box.call("references", {"symbol": "compute_total"}, None)
        assert not outcome.ok
        assert outcome.output.startswith("error: nols (`no-such-langserver`) is not installed")
        bad = await box.call("references", {"path": "main.py"}, None)
        assert not bad.ok and "give path, line and column, or symbol" in bad.output


def _holding(root: Path) -> list[int]:
    """Host processes whose working directory is ``root``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "cwd") == str(root):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


async def test_semantic_nothing_keeps_running_after_the_sandbox(tmp_path: Path) -> None:
    program("basedpyright")
    root = make_project(tmp_path / "ws")
    async with LocalSandbox(root, read_only=server_mounts()) as sandbox:
        box = ToolBox(sandbox)
        outcome = await box.call("hover", {"symbol": "compute_total"}, None)
        assert outcome.ok, outcome.output
        assert _holding(root)
    assert _holding(root) == []
