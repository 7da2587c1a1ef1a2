"""Ghost text in headless Neovim against the real driveros-lsp and a scripted FIM endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.editors._model import DRIVEROS_LSP, model_env, model_server
from tests.editors.neovim._nvim import run_nvim

SOURCE = "def add(a, b):\n    \n\n\nprint(add(1, 2))\n"


@pytest.fixture
def fim_model(tmp_path: Path) -> Iterator[str]:
    with model_server(
        {"turns": [{"text": "eturn a + b"}], "repeat_last": True}, tmp_path / "script.json"
    ) as url:
        yield url


def test_neovim_ghost_text_appears_and_tab_inserts_it(tmp_path: Path, fim_model: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "add.py").write_text(SOURCE)
    out = run_nvim(
        "inline_ghost.lua",
        cwd=ws,
        env={
            "DRIVEROS_LSP": str(DRIVEROS_LSP),
            **model_env(fim_model, model=None),
        },
        timeout=120,
    )
    assert "error" not in out, json.dumps([out, out["_stderr"][-3000:]], indent=1, default=str)
    assert out["mapping"] == "DriverOS: accept the suggestion"
    # the extmark: inline virtual text at the cursor, after the typed "r"
    assert out["ghost"] == [{"row": 1, "col": 5, "text": "eturn a + b", "pos": "inline"}]
    assert out["line_with_ghost"] == "    r"
    assert out["lines"][1] == "    return a + b"
    assert out["cursor"] == [2, 16]  # after the inserted text
    assert out["visible_after"] is False
    assert out["counts_written"] is True
    counts_file = tmp_path / "ws.nvim-home" / ".xdg-state" / "driveros" / "inline-acceptance.json"
    counts = json.loads(counts_file.read_text())
    assert counts["openai/scripted-model"]["accepted"] == 1
