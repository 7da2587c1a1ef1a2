"""A new user's first minutes in a real Neovim (issue 16): the README's configuration starts
without a warning, and a single file outside any project is a workspace of its own."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.editors._model import model_env, model_server, venv_path
from tests.editors.neovim._nvim import run_nvim

CALC = "def add(a, b):\n    return a - b\n"
FIX = [
    {
        "tool_calls": [
            {
                "name": "edit_file",
                "arguments": {
                    "path": "x.py",
                    "old_string": "return a - b",
                    "new_string": "return a + b",
                },
            }
        ]
    },
    {"text": "add() adds now."},
]


def readme_neovim_snippet() -> str:
    """The first ```lua block of the README's "## Neovim" section, verbatim."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Neovim\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```lua\n(.*?)```", section, re.DOTALL)
    assert found, "the README's Neovim section has no lua block"
    return found.group(1)


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    # the server on PATH, as the README asks; no provider key unless given
    return {"PATH": venv_path(), **(extra or {})}


def _warnings(out: dict[str, object]) -> list[str]:
    messages = [str(m) for m in out["messages"]]  # type: ignore[attr-defined]
    notes = [str(n["msg"]) for n in out["notes"]]  # type: ignore[attr-defined, index]
    return [
        m
        for m in [*messages, *notes, *str(out["_stderr"]).splitlines()]
        if "Warning" in m or "invalid settings" in m or "settings must be" in m
    ]


@pytest.fixture
def scripted_model(tmp_path: Path) -> Iterator[str]:
    with model_server(FIX, tmp_path / "script.json") as url:
        yield url


@pytest.mark.parametrize("config", ["readme", "enable-only"])
def test_the_readme_setup_starts_without_a_warning(tmp_path: Path, config: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").mkdir()
    (project / "main.py").write_text("x = 1\n")
    init = tmp_path / "init.lua"
    snippet = readme_neovim_snippet() if config == "readme" else "vim.lsp.enable('driveros')\n"
    assert "vim.lsp.enable('driveros')" in snippet
    init.write_text(snippet)
    out = run_nvim(
        "default_setup.lua",
        cwd=project,
        env=_env({"DRIVEROS_INIT": str(init), "DRIVEROS_FILE": str(project / "main.py")}),
    )
    assert "error" not in out, out
    assert out["root_dir"] == str(project)
    assert out["clients"] == 1
    assert out["start_error"] is None  # the run started (it fails later: no provider key)
    assert _warnings(out) == []


def test_a_single_file_outside_any_project_gets_a_run(tmp_path: Path, scripted_model: str) -> None:
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "x.py").write_text(CALC)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    init = tmp_path / "init.lua"
    init.write_text("vim.lsp.enable('driveros')\n")
    out = run_nvim(
        "default_setup.lua",
        cwd=elsewhere,
        env=_env(
            {
                "DRIVEROS_INIT": str(init),
                "DRIVEROS_FILE": str(lone / "x.py"),
                "DRIVEROS_TASK": "make add add",
                "DRIVEROS_WAIT_PROPOSAL": "1",
                **model_env(scripted_model),
            }
        ),
        timeout=180,
    )
    assert "error" not in out, json.dumps([out.get("error"), out["_stderr"][-3000:]])
    assert out["root_dir"] == str(lone)
    assert out["clients"] == 1  # none for the empty buffer Neovim starts with
    assert out["start_error"] is None
    assert out["proposal"] == [{"path": "x.py", "uri": (lone / "x.py").as_uri()}]
    assert (lone / "x.py").read_text() == CALC  # proposed, not written
    assert _warnings(out) == []
