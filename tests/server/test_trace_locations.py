"""A semantic tool's answer reaches the editor as LSP locations (issue 31): `driveros/trace`
carries each place of a `tool_result` as `{uri, range}` in the client's position encoding
(the real driveros-lsp, the real basedpyright in the run's sandbox, a scripted model); and a
place outside the workspace is never read nor sent."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

import pytest

from driveros.agent import ToolResult
from driveros.testing import ToolCallSpec, Turn
from driveros_lsp import protocol
from driveros_lsp._editor import ClientTraits
from driveros_lsp._trace_locations import editor_locator
from tests.semantic._oracle import program
from tests.server._lsp import editor_session
from tests.server.conftest import ModelFactory, model_env
from tests.server.test_flow import SETTINGS, start_run

CALC = 'def compute_total(items):\n    """Sum the items."""\n    return sum(items)\n'
# a character outside the BMP before the use: 1 code point, 2 UTF-16 units, 4 UTF-8 bytes
USE = (
    "from pkg.calc import compute_total\n\n\n"
    'def twice(items):\n    note = "😀"; return 2 * compute_total(items)\n'
)
TURNS = [
    Turn(tool_calls=[ToolCallSpec("references", {"symbol": "compute_total"})]),
    Turn(tool_calls=[ToolCallSpec("definition", {"path": "pkg/use.py", "line": 5, "column": 35})]),
    Turn(text="Found them."),
]


def project(root: Path) -> Path:
    """``pkg/calc.py`` defining compute_total and ``pkg/use.py`` using it, under ``root``."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/__init__.py").write_text("")
    (root / "pkg/calc.py").write_text(CALC)
    (root / "pkg/use.py").write_text(USE)
    return root


def _units(text: str, encoding: str) -> int:
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le")) // 2 if encoding == "utf-16" else len(text.encode())


def _where(root: Path, rel: str, line: int, word: str, encoding: str) -> dict[str, Any]:
    """The Location of ``word`` on 0-based ``line`` of ``rel``, counted in ``encoding``."""
    text = (root / rel).read_text().splitlines()[line]
    at = text.index(word)
    start = _units(text[:at], encoding)
    return {
        "uri": (root / rel).as_uri(),
        "range": {
            "start": {"line": line, "character": start},
            "end": {"line": line, "character": start + _units(word, encoding)},
        },
    }


@pytest.mark.parametrize("profile", ["vscode", "neovim"])
async def test_semantic_answers_are_trace_locations_in_the_clients_encoding(
    tmp_path: Path, scripted_model: ModelFactory, profile: str
) -> None:
    program("basedpyright")
    root = project(tmp_path / "ws")
    async with (
        scripted_model(TURNS) as model,
        editor_session(root, profile=profile, env=model_env(model), settings=SETTINGS) as ed,
    ):
        run_id = await start_run(ed, "find", until="finished")
        traces = [t for t in ed.traces if t["runId"] == run_id]
        encoding = ed.encoding
        assert not ed.wire_errors, ed.wire_errors
    results = {t["event"]["name"]: t for t in traces if t["event"]["type"] == "tool_result"}
    refs, definition = results["references"], results["definition"]
    assert refs["event"]["ok"] and definition["event"]["ok"], (refs, definition)
    word = "compute_total"
    assert refs["locations"] == [
        _where(root, "pkg/calc.py", 0, word, encoding),
        _where(root, "pkg/use.py", 0, word, encoding),
        _where(root, "pkg/use.py", 4, word, encoding),
    ]
    assert [(p["path"], p["line"]) for p in refs["event"]["locations"]] == [
        ("pkg/calc.py", 1),
        ("pkg/use.py", 1),
        ("pkg/use.py", 5),
    ]
    assert definition["locations"] == [_where(root, "pkg/calc.py", 0, word, encoding)]
    # every other event carries none
    assert all(t["locations"] == [] for t in traces if t["event"]["type"] != "tool_result")
    assert encoding == ("utf-16" if profile == "vscode" else "utf-8")


async def test_a_renames_locations_are_the_old_names_in_the_users_files(
    tmp_path: Path, scripted_model: ModelFactory
) -> None:
    program("basedpyright")
    root = project(tmp_path / "ws")
    rename = ToolCallSpec("rename", {"symbol": "compute_total", "new_name": "grand_total"})
    turns = [Turn(tool_calls=[rename]), Turn(text="Renamed.")]
    async with (
        scripted_model(turns) as model,
        editor_session(root, profile="neovim", env=model_env(model), settings=SETTINGS) as ed,
    ):
        run_id = await start_run(ed, "rename")
        [done] = [t for t in ed.traces if t["event"]["type"] == "tool_result"]
        await ed.command(protocol.CMD_REVIEW_REJECT, {"runId": run_id})
        encoding = ed.encoding
    assert done["event"]["ok"], done
    # the proposal is not applied: the links point at the old name where the user has it
    assert done["locations"] == [
        _where(root, "pkg/calc.py", 0, "compute_total", encoding),
        _where(root, "pkg/use.py", 0, "compute_total", encoding),
        _where(root, "pkg/use.py", 4, "compute_total", encoding),
    ]


class _Docs:
    text_documents: ClassVar[dict[str, Any]] = {}


class _Editor:
    traits = ClientTraits(encoding="utf-16")
    workspace = _Docs()


async def test_trace_locations_leave_out_places_outside_the_workspace(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    outside = tmp_path / "secret.py"
    outside.write_text("s = 2\n")
    os.symlink(outside, root / "link.py")
    places = ["a.py", "../secret.py", str(outside), "link.py", "a\x00.py", "missing.py"]
    event = ToolResult(
        run_id="r",
        turn=1,
        call_id="c",
        name="references",
        ok=True,
        output="",
        locations=[{"path": p, "line": 1, "column": 1} for p in places],
    )
    locate = editor_locator(_Editor(), lambda: root)  # type: ignore[arg-type]
    found = await locate(event)
    # a file the run created (not in the workspace yet) is a link all the same, unconverted
    assert [loc.uri for loc in found] == [(root / "a.py").as_uri(), (root / "missing.py").as_uri()]
    assert found[0].range.end.character == 1  # the identifier `x`
