"""The whole Neovim flow against the real driveros-lsp and the scripted model server."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.editors._model import DRIVEROS_LSP, model_env, model_server
from tests.editors.neovim._nvim import run_nvim, why

CALC = "def add(a, b):\n    return a - b\n"
UTIL = "def double(x):\n    return x * 2\n"

SCRIPT = [
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
    {
        "tool_calls": [
            {
                "name": "edit_file",
                "arguments": {
                    "path": "calc.py",
                    "old_string": "return a - b",
                    "new_string": "return a + b",
                },
            }
        ]
    },
    {
        "tool_calls": [
            {
                "name": "edit_file",
                "arguments": {
                    "path": "util.py",
                    "old_string": "return x * 2",
                    "new_string": "return x + x",
                },
            }
        ]
    },
    {"text": "add() subtracted; it adds now. I also simplified double()."},
    {"text": "This project adds numbers.", "delay_s": 30},
]


@pytest.fixture
def scripted_model(tmp_path: Path) -> Iterator[str]:
    with model_server(SCRIPT, tmp_path / "script.json") as url:
        yield url


def _repo(path: Path) -> Path:
    path.mkdir()
    (path / "calc.py").write_text(CALC)
    (path / "util.py").write_text(UTIL)
    (path / ".gitignore").write_text("__pycache__/\n")
    for cmd in (
        ["git", "init", "-q"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init"],
    ):
        subprocess.run(cmd, cwd=path, check=True, capture_output=True)
    return path


@pytest.mark.e2e
def test_neovim_fix_review_undo_and_cancel(tmp_path: Path, scripted_model: str) -> None:
    repo = _repo(tmp_path / "repo")
    out = run_nvim(
        "e2e_fix.lua",
        cwd=repo,
        env={
            "DRIVEROS_LSP": str(DRIVEROS_LSP),
            **model_env(scripted_model),
        },
        timeout=180,
    )
    assert "error" not in out, why(out)
    assert out["trace_capability"] is True
    # the code action came from a diagnostic another tool published
    assert "Ask agent to fix: add() subtracts instead of adding" in out["titles"]
    # the trace buffer filled and opened by itself
    lines = out["trace_lines"]
    assert lines[0].startswith("# Run ")
    assert any(line.startswith("  ▶ edit_file") for line in lines)
    assert any(line.startswith("= answered (exit 0) · verified: yes") for line in lines)
    assert out["trace_windows"] == 1
    assert sorted(out["proposal"]) == ["calc.py", "util.py"]
    # each file was shown in Neovim's diff mode: the current text against the proposal's newText
    views = {prompt.split(": ", 1)[1]: view for prompt, view in out["review_views"].items()}
    assert sorted(views) == ["modify calc.py", "modify util.py"]
    for rel, new in (
        ("calc.py", ["def add(a, b):", "    return a + b"]),
        ("util.py", ["def double(x):", "    return x + x"]),
    ):
        current, proposed = views[f"modify {rel}"]
        assert current["name"].startswith("driveros://current/") and current["name"].endswith(rel)
        assert proposed["name"].startswith("driveros://proposal/")
        assert current["diff"] and proposed["diff"]
        assert proposed["lines"] == new
        assert current["lines"] == (CALC if rel == "calc.py" else UTIL).splitlines()
    # accept calc.py: the buffer changed (undoable), the disk did not
    assert out["calc_buffer"] == ["def add(a, b):", "    return a + b"]
    assert out["calc_modified"] is True
    assert out["calc_disk"] == ["def add(a, b):", "    return a - b"]
    assert out["calc_after_undo"] == ["def add(a, b):", "    return a - b"]
    assert out["calc_after_redo"] == ["def add(a, b):", "    return a + b"]
    # reject util.py: untouched everywhere
    assert out["util_disk"] == ["def double(x):", "    return x * 2"]
    assert not out["util_loaded"]
    assert (repo / "calc.py").read_text() == CALC and (repo / "util.py").read_text() == UTIL
    # the second run was canceled for real
    states = {r["runId"]: r["state"] for r in out["runs"]}
    assert sorted(states.values()) == ["accepted", "canceled"] or sorted(states.values()) == [
        "canceled",
        "rejected",
    ]


@pytest.mark.e2e
def test_neovim_custom_command_by_name_and_from_the_picker(
    tmp_path: Path, scripted_model: str
) -> None:
    repo = _repo(tmp_path / "repo")
    # run_nvim's XDG_CONFIG_HOME is next to the repository: the user's commands live there
    commands = tmp_path / "repo.nvim-home" / ".xdg-config" / "driveros" / "commands"
    commands.mkdir(parents=True)
    (commands / "explain.md").write_text(
        "---\ndescription: Explain a file\n---\nExplain $1, $2: $ARGUMENTS\n"
    )
    out = run_nvim(
        "custom_command.lua",
        cwd=repo,
        env={
            "DRIVEROS_LSP": str(DRIVEROS_LSP),
            **model_env(scripted_model),
        },
        timeout=120,
    )
    assert "error" not in out, json.dumps([out.get("error"), out.get("notes")], indent=1)
    assert out["first_task"] == "/explain calc.py briefly"
    assert out["picked_from"] == ["/explain  Explain a file"]
    assert out["input_prompt"] == "/explain: "
    assert out["second_task"] == "/explain util.py"
