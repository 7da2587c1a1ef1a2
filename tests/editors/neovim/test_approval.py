"""Approval `ask` in a real Neovim (issue 14): the question arrives through vim.ui.select
(the plugin's window/showMessageRequest handler) and the answer shows in the trace."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.editors._model import model_env, model_server, venv_path
from tests.editors.neovim._nvim import run_nvim

RUN_PROBE = {"tool_calls": [{"name": "run", "arguments": {"command": "python3 probe.py"}}]}
SCRIPT = [RUN_PROBE, RUN_PROBE, {"text": "The probe ran twice."}]


@pytest.fixture
def scripted_model(tmp_path: Path) -> Iterator[str]:
    with model_server(SCRIPT, tmp_path / "script.json") as url:
        yield url


@pytest.mark.e2e
def test_neovim_answers_the_approval_question_through_vim_ui_select(
    tmp_path: Path, scripted_model: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").mkdir()
    (project / "probe.py").write_text("print('probe ran')\n")
    out = run_nvim(
        "approval_ask.lua",
        cwd=project,
        env={
            "PATH": venv_path(),
            "DRIVEROS_FILE": str(project / "probe.py"),
            "DRIVEROS_ANSWER": "Allow for this run",
            **model_env(scripted_model),
        },
        timeout=180,
    )
    assert "error" not in out, json.dumps([out.get("error"), out["_stderr"][-3000:]])
    assert out["other_is_question"] is False  # other requests keep Neovim's own handler
    (select,) = out["selects"]  # asked once: the second command was allowed for the run
    assert select["kind"] == "driveros_approval"
    assert select["items"] == ["Allow once", "Allow for this run", "Deny"]
    assert "driveros wants to run: python3 probe.py" in select["prompt"]
    assert "runs in: local (bubblewrap), network on, scratch copy" in select["prompt"]
    first, second = out["approvals"]
    assert (first["decision"], first["asked"], first["scope"]) == ("approved", True, "run")
    assert first["answered_by"] == "Neovim"
    assert (second["decision"], second["asked"]) == ("allowed", False)
    assert any(
        "approved run (asked, by Neovim, for this run)" in line for line in out["trace_lines"]
    )
