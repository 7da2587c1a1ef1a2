"""The tools tell the model the truth: what a search skipped, ranges of big files, odd names,
hints that name real tools; on both tiers (local and docker), with both search engines."""

from __future__ import annotations

import io
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.sandbox.conftest import SANDBOX_UID, require_docker

from driveros.agent import ToolResult
from driveros.agent._tools import TOOL_NAMES, ToolBox, tool_specs
from driveros.cli._output import TraceWriter
from driveros.sandbox import DockerSandbox, LocalSandbox, Sandbox

BIG = 50 * 1024 * 1024


def _workspace(base: Path) -> Path:
    ws = base / "ws"
    (ws / ".config").mkdir(parents=True)
    (ws / ".config" / "settings.py").write_text("NEEDLE = 'hidden folder'\n")
    (ws / ".hidden.txt").write_text("a NEEDLE in a hidden file\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("NEEDLE inside .git\n")
    (ws / ".env").write_text("TOKEN=NEEDLE-secret\n")
    (ws / ".ssh").mkdir()
    (ws / ".ssh" / "id_ed25519").write_text("NEEDLE-private-key\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("def main():\n    return 'NEEDLE'\n")
    (ws / "blob.bin").write_bytes(b"\x89PNG\x00NEEDLE binary\n")
    fd = os.open(os.fsencode(ws) + b"/bad\xffname.txt", os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b"NEEDLE odd\n")
    os.close(fd)
    with (ws / "big.log").open("wb") as handle:
        line = b"x" * 99 + b"\n"
        block = line * 10_000  # 1,000,000 bytes
        for _ in range(BIG // len(block)):
            handle.write(block)
        handle.write(b"the NEEDLE at the end\n")
    if os.geteuid() == 0:
        for path in [ws, *ws.rglob("*")]:
            os.chown(path, SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)
    return ws


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _workspace(tmp_path_factory.mktemp("truth"))


ENGINES = {"ripgrep": "/usr/bin:/bin", "python": "/nonexistent"}


@pytest.fixture(params=["local-ripgrep", "local-python", "docker"])
async def box(request: pytest.FixtureRequest, ws: Path) -> AsyncIterator[ToolBox]:
    sandbox: Sandbox
    if request.param == "docker":
        require_docker()
        sandbox = DockerSandbox(ws)
    else:
        engine = request.param.removeprefix("local-")
        sandbox = LocalSandbox(ws, base_env={"PATH": ENGINES[engine]})
    async with sandbox:  # type: ignore[attr-defined]
        yield ToolBox(sandbox, output_limit=100_000)


async def test_search_looks_in_hidden_files_never_git_and_names_what_it_skipped(
    box: ToolBox,
) -> None:
    out = await box.call("search", {"pattern": "NEEDLE"}, None)
    assert out.ok, out.output
    text = out.output
    assert ".config/settings.py:1:" in text
    assert ".hidden.txt:1:" in text
    assert "src/app.py:2:" in text
    assert ".git" not in text.replace(".gitignore", "")
    assert "NEEDLE-secret" not in text and "NEEDLE-private-key" not in text
    assert "[2 files secret, not searched (deny-listed): .env, .ssh/id_ed25519]" in text, text
    # a file the search could not show or search is named, never silently dropped
    assert r"bad\xffname.txt" in text, text
    assert "[1 file binary (a NUL byte), matching, lines not shown: blob.bin]" in text
    assert "blob.bin:" not in text
    if "over 8 MB" in text:  # the Python fallback: big files are named, not searched
        assert re.search(r"\[1 file over 8 MB, not searched: .*big\.log", text), text
    else:
        assert "big.log:" in text  # ripgrep searches every size


async def test_the_python_fallback_reports_big_and_binary_files(ws: Path) -> None:
    async with LocalSandbox(ws, base_env={"PATH": "/nonexistent"}) as sandbox:
        out = await ToolBox(sandbox).call("search", {"pattern": "NEEDLE"}, None)
    assert "[1 file over 8 MB, not searched: read ranges of them with read_file: big.log]" in (
        out.output
    )
    assert "[1 file binary (a NUL byte), matching, lines not shown: blob.bin]" in out.output


async def test_read_file_reads_ranges_of_a_50_mb_file(box: ToolBox) -> None:
    whole = await box.call("read_file", {"path": "big.log"}, None)
    assert not whole.ok
    assert "offset" in whole.output and "limit" in whole.output
    head = await box.call("read_file", {"path": "big.log", "offset": 3, "limit": 2}, None)
    assert head.ok, head.output
    total = BIG // 1_000_000 * 10_000 + 1
    assert head.output == f"[lines 3-4 of {total}]\n" + ("x" * 99 + "\n") * 2
    tail = await box.call("read_file", {"path": "big.log", "offset": total}, None)
    assert tail.output == f"[lines {total}-{total} of {total}]\nthe NEEDLE at the end\n"
    past = await box.call("read_file", {"path": "big.log", "offset": total + 5}, None)
    assert past.output.startswith(f"[no lines from {total + 5}: the file has {total} lines]")


async def test_a_huge_range_is_capped_and_says_so(box: ToolBox) -> None:
    out = await box.call("read_file", {"path": "big.log", "offset": 1, "limit": 100_000}, None)
    assert out.ok
    header = out.output.splitlines()[0]
    assert re.fullmatch(r"\[lines 1-\d+ of \d+; cut at 256 KB: read a smaller range\]", header)


async def test_list_files_shows_non_utf8_names_escaped_and_says_how_to_reach_them(
    box: ToolBox,
) -> None:
    out = await box.call("list_files", {}, None)
    assert out.ok
    lines = out.output.splitlines()
    assert any(line.startswith("bad\\xffname.txt  [name not UTF-8") for line in lines), lines
    assert ".hidden.txt" in lines and ".config/" in lines
    assert "`run`" in lines[-1]
    refused = await box.call("read_file", {"path": "bad\udcffname.txt"}, None)
    assert not refused.ok and "UTF-8" in refused.output


def _hinted_names(message: str) -> set[str]:
    """Names a message tells the model to use: snake_case words and `backticked` words after
    use/with/try, the way hints are written (quoted echoes of the call are not hints)."""
    message = re.sub(r"'[^']*'", "", message)
    names = set(re.findall(r"\b[a-z]+_[a-z_]+\b", message))
    names |= set(re.findall(r"\b(?:use|with|try)\s+`?([a-z_]+)`?", message))
    return names


async def test_every_hint_in_a_tool_error_names_a_tool_that_exists(box: ToolBox) -> None:
    arguments = {
        name: set(spec.parameters.get("properties", {}))
        for name, spec in ((s.name, s) for s in tool_specs())
    }
    known = set(TOOL_NAMES) | set().union(*arguments.values())
    calls = [
        ("read_file", {"path": "blob.bin"}),
        ("read_file", {"path": "blob.bin", "offset": 1}),
        ("read_file", {"path": "big.log"}),
        ("read_file", {"path": "missing.txt"}),
        ("read_file", {"path": ".env"}),
        ("read_file", {"path": "src"}),
        ("read_file", {"path": "../outside"}),
        ("read_file", {"path": "/etc/passwd"}),
        ("read_file", {"path": "bad\udcffname.txt"}),
        ("read_file", {"path": "src/app.py", "offset": 0}),
        ("edit_file", {"path": "blob.bin", "old_string": "a", "new_string": "b"}),
        ("edit_file", {"path": "src/app.py", "old_string": "nope", "new_string": "b"}),
        ("edit_file", {"path": "src/app.py", "old_string": "a", "new_string": "a"}),
        ("search", {"pattern": "("}),
        ("list_files", {"path": "missing"}),
        ("list_files", {"path": "src/app.py"}),
        ("read_bytes", {"path": "blob.bin"}),
        ("diagnostics", {}),
        ("run", {}),
    ]
    for name, args in calls:
        out = await box.call(name, args, None)
        assert not out.ok, (name, args, out.output)
        unknown = _hinted_names(out.output) - known
        assert not unknown, f"{name}{args}: {out.output!r} names {unknown}"


def test_the_trace_keeps_the_indentation_of_tool_output() -> None:
    out = io.StringIO()
    code = "def main():\n    if x:\n\treturn 'a  b'\n"
    TraceWriter(out).write(
        ToolResult(run_id="r", turn=1, call_id="c", name="read_file", ok=True, output=code)
    )
    lines = out.getvalue().splitlines()
    assert lines[1:] == ["      def main():", "          if x:", "          return 'a  b'"]
