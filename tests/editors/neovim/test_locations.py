"""A semantic tool's answer in a real Neovim (issue 31): the trace buffer lists its places,
<CR> on one opens the file at the place, `:DriverOS locations` fills the quickfix list (the
real driveros-lsp, the real basedpyright in the run's sandbox, the scripted model)."""

from __future__ import annotations

from pathlib import Path

from tests.editors._model import DRIVEROS_LSP, model_env, model_server
from tests.editors.neovim._nvim import run_nvim, why
from tests.semantic._oracle import program
from tests.server.test_trace_locations import USE, project

SCRIPT = [
    {"tool_calls": [{"name": "references", "arguments": {"symbol": "compute_total"}}]},
    {"text": "Three references."},
]


def test_neovim_semantic_locations_jump_and_fill_the_quickfix_list(tmp_path: Path) -> None:
    program("basedpyright")
    # USE has 4 UTF-8 bytes, 1 character before the use: Neovim's columns are bytes
    root = project(tmp_path / "ws")
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\nversion = '0'\n")
    with model_server(SCRIPT, tmp_path / "script.json") as url:
        env = {"DRIVEROS_LSP": str(DRIVEROS_LSP), **model_env(url)}
        out = run_nvim("locations.lua", cwd=root, env=env, timeout=180)
    assert "error" not in out, why(out)
    assert out["place_lines"] == [
        "→ pkg/calc.py:1:5",
        "→ pkg/use.py:1:22",
        f"→ pkg/use.py:5:{USE.splitlines()[4].encode().index(b'compute_total') + 1}",
    ]
    col = USE.splitlines()[4].encode().index(b"compute_total")  # 0-based bytes
    assert out["jumped"] == {"file": str(root / "pkg/use.py"), "line": 5, "col": col}
    assert out["jumped_from_trace"] is True  # the trace window stays as it was
    assert out["qf_title"].endswith(": references")
    assert out["qf"] == [
        {"file": str(root / "pkg/calc.py"), "lnum": 1, "col": 5},
        {"file": str(root / "pkg/use.py"), "lnum": 1, "col": 22},
        {"file": str(root / "pkg/use.py"), "lnum": 5, "col": col + 1},
    ]
    assert "compute_total" in out["qf_text"]
