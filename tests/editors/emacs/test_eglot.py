"""Emacs + eglot (issue 29, row 1): the README's eglot snippet, verbatim, in a real
`emacs --batch`: ``driveros-lsp --wrap -- pyright-langserver --stdio`` against the scripted
model. eglot's own flow, nothing built by hand: flymake shows pyright's diagnostic,
``eglot-code-actions`` at point lists "Ask agent to fix", the run proposes, "Accept agent
proposal" from the same menu edits the buffer and leaves the disk alone."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.editors._model import model_env, model_server
from tests.editors.emacs._emacs import run_emacs

CALC = "def add(a: int, b: int) -> int:\n    return a + b\n\n\ntotal: str = add(1, 2)\n"
FIXED = CALC.replace("total: str", "total: int")
TURNS = [
    {
        "tool_calls": [
            {
                "name": "edit_file",
                "arguments": {
                    "path": "calc.py",
                    "old_string": "total: str = add(1, 2)",
                    "new_string": "total: int = add(1, 2)",
                },
            }
        ]
    },
    {"text": "total is an int now."},
]


def readme_eglot_snippet() -> str:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    after = readme.split("Emacs (eglot)", 1)[1]
    found = re.search(r"```elisp\n(.*?)```", after, re.DOTALL)
    assert found, "the README has no eglot block"
    return found.group(1)


@pytest.fixture
def scripted_model(tmp_path: Path) -> Iterator[str]:
    with model_server(TURNS, tmp_path / "script.json") as url:
        yield url


@pytest.mark.e2e
def test_eglot_readme_setup_fixes_a_pyright_diagnostic(tmp_path: Path, scripted_model: str) -> None:
    snippet = readme_eglot_snippet()
    assert '"--wrap" "--" "pyright-langserver"' in snippet
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / "calc.py").write_text(CALC)
    init = tmp_path / "init.el"
    init.write_text(snippet)
    env = {**model_env(scripted_model), "DRIVEROS_STATE_DIR": str(tmp_path / "state")}
    out, stderr = run_emacs(
        "eglot_wrap.el",
        project=project,
        home=tmp_path,
        snippet=init,
        file=project / "calc.py",
        env=env,
        timeout=400,
    )
    assert "error" not in out, [out.get("error"), out.get("events"), stderr[-3000:]]
    assert out["mode"] == "python-mode"
    assert "driveros-lsp" in out["contact"]  # started from the README's entry
    assert "--wrap" in out["contact"]
    # flymake shows pyright's own diagnostic, and the agent is offered on it
    assert '"int" is not assignable to declared type "str"' in out["flymake"]
    fixes = [t for t in out["titles"] if t.startswith("Ask agent to fix: ")]
    assert fixes, out["titles"]
    assert '"int" is not assignable' in fixes[0]
    assert out["state"] == "proposed"
    assert out["disk_before_accept"] == CALC
    assert "Accept agent proposal" in out["review_titles"]
    assert out["buffer"] == FIXED
    assert out["modified"] is True
    assert (project / "calc.py").read_text() == CALC  # in the buffer, not on disk
