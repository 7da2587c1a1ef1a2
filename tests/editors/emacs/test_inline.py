"""Emacs + eglot: docs/inline.md's `driveros-inline-complete`, verbatim, in a real
`emacs --batch` against driveros-lsp and the scripted FIM endpoint."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.editors._model import model_env, model_server
from tests.editors.emacs._emacs import run_emacs

SOURCE = "def add(a, b):\n    \n\n\nprint(add(1, 2))\n"


def doc_snippet() -> str:
    text = (REPO_ROOT / "docs" / "inline.md").read_text(encoding="utf-8")
    found = re.search(r"```elisp\n(.*?)```", text, re.DOTALL)
    assert found, "docs/inline.md has no elisp block"
    return found.group(1)


@pytest.fixture
def fim_model(tmp_path: Path) -> Iterator[str]:
    with model_server(
        {"turns": [{"text": "return a + b"}], "repeat_last": True}, tmp_path / "script.json"
    ) as url:
        yield url


def test_eglot_inline_command_inserts_the_completion(tmp_path: Path, fim_model: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / "add.py").write_text(SOURCE)
    snippet = tmp_path / "inline.el"
    snippet.write_text(doc_snippet())
    state = tmp_path / "state"
    out, stderr = run_emacs(
        "eglot_inline.el",
        project=project,
        home=tmp_path,
        snippet=snippet,
        file=project / "add.py",
        env={"DRIVEROS_STATE_DIR": str(state), **model_env(fim_model, model=None)},
        timeout=180,
    )
    assert "error" not in out, [out.get("error"), stderr[-3000:]]
    assert out["buffer"] == SOURCE.replace("    \n", "    return a + b\n", 1)
    assert out["point"] == [2, 16]
    assert out["counted"] is True
    assert (project / "add.py").read_text() == SOURCE  # the buffer, not the disk
