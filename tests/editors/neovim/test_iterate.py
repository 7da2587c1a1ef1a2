"""Iterating on a run in a real Neovim against the real driveros-lsp and the scripted model:
checkpoints in the trace, :DriverOS revert N, :DriverOS followup, :DriverOS accept N."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.editors.neovim._nvim import run_nvim

CALC = "def add(a, b):\n    return a - b\n"


def _write(path: str, content: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


SCRIPT = [
    _write("plan.txt", "plan\n"),
    {"tool_calls": [{"name": "run", "arguments": {"command": "sed -i 's/a - b/a + b/' calc.py"}}]},
    _write("extra.txt", "more\n"),
    {"text": "Done in three turns."},
    _write("four.txt", "4\n"),
    {"text": "Followed up."},
]


@pytest.fixture
def scripted_model(tmp_path: Path) -> Iterator[str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "driveros.testing.scripted", "--script", str(script)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        yield json.loads(proc.stdout.readline())["openai_base_url"]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


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
            "DRIVEROS_LSP": str(Path(sys.executable).with_name("driveros-lsp")),
            "OPENAI_API_KEY": "test-key",
            "OPENAI_BASE_URL": scripted_model,
            "OPENAI_MODEL": "scripted-model",
        },
        timeout=180,
    )
    assert "error" not in out, json.dumps(
        [out.get("error"), out.get("notes"), out.get("_stderr", "")[-3000:]], indent=1
    )
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
