"""Iterating on a run in a real Neovim against the real driveros-lsp and the scripted model:
checkpoints in the trace, :DriverOS revert N, :DriverOS followup, :DriverOS accept N."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.editors._model import DRIVEROS_LSP, model_env, model_server, write_turn
from tests.editors.neovim._nvim import run_nvim, why

CALC = "def add(a, b):\n    return a - b\n"


SCRIPT = [
    write_turn("plan.txt", "plan\n"),
    {"tool_calls": [{"name": "run", "arguments": {"command": "sed -i 's/a - b/a + b/' calc.py"}}]},
    write_turn("extra.txt", "more\n"),
    {"text": "Done in three turns."},
    write_turn("four.txt", "4\n"),
    {"text": "Followed up."},
]


@pytest.fixture
def scripted_model(tmp_path: Path) -> Iterator[str]:
    with model_server(SCRIPT, tmp_path / "script.json") as url:
        yield url


def test_neovim_checkpoints_revert_followup_and_accept_through(
    tmp_path: Path, scripted_model: str
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text(CALC)
    out = run_nvim(
        "iterate.lua",
        cwd=repo,
        env={
            "DRIVEROS_LSP": str(DRIVEROS_LSP),
            **model_env(scripted_model),
        },
        timeout=180,
    )
    assert "error" not in out, why(out)
    assert [line.strip().split(" — ")[0] for line in out["checkpoint_lines"]] == [
        "◆ checkpoint 1 (turn 1): plan.txt",
        "◆ checkpoint 2 (turn 2): calc.py",
        "◆ checkpoint 3 (turn 3): extra.txt",
    ]
    assert out["after_revert"] == ["calc.py", "plan.txt"]
    assert out["after_followup"] == ["calc.py", "four.txt", "plan.txt"]
    assert [line.strip().split(" — ")[0] for line in out["numbered_lines"]] == [
        "## Turn 1",
        "◆ checkpoint 1 (turn 1): plan.txt",
        "## Turn 2",
        "◆ checkpoint 2 (turn 2): calc.py",
        "## Turn 3",
        "◇ checkpoint 3 (turn 3): extra.txt",  # reverted: no command names it any more
        "## Turn 4",
        "## Turn 5",
        "◆ checkpoint 3 (turn 5): four.txt",
        "## Turn 6",
    ]
    assert out["numbered_lines"][5].endswith("— reverted")
    # a created file is a new buffer; Neovim writes it with its end-of-line (as any new file)
    assert (repo / "plan.txt").read_text().rstrip("\n") == "plan"
    assert "a + b" in out["calc"]  # the shell edit, in the buffer
    assert out["four_on_disk"] is False and not (repo / "extra.txt").exists()
