"""Emacs + eglot: docs/inline.md's `driveros-inline-complete`, verbatim, in a real
`emacs --batch` against driveros-lsp and the scripted FIM endpoint."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.editors.emacs.test_eglot import emacs_binary

SCRIPT = Path(__file__).resolve().parent / "el" / "eglot_inline.el"
SOURCE = "def add(a, b):\n    \n\n\nprint(add(1, 2))\n"


def doc_snippet() -> str:
    text = (REPO_ROOT / "docs" / "inline.md").read_text(encoding="utf-8")
    found = re.search(r"```elisp\n(.*?)```", text, re.DOTALL)
    assert found, "docs/inline.md has no elisp block"
    return found.group(1)


@pytest.fixture
def fim_model(tmp_path: Path) -> Iterator[str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "return a + b"}], "repeat_last": True}))
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


def test_eglot_inline_command_inserts_the_completion(tmp_path: Path, fim_model: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / "add.py").write_text(SOURCE)
    snippet = tmp_path / "inline.el"
    snippet.write_text(doc_snippet())
    result = tmp_path / "result.json"
    state = tmp_path / "state"
    env = {
        "HOME": str(tmp_path),
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "LANG": "C.UTF-8",
        "DRIVEROS_SNIPPET": str(snippet),
        "DRIVEROS_FILE": str(project / "add.py"),
        "DRIVEROS_STATE_DIR": str(state),
        "RESULT": str(result),
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": fim_model,
    }
    proc = subprocess.run(
        [emacs_binary(), "--batch", "-Q", "-l", str(SCRIPT)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.exists(), proc.stderr[-3000:]
    out = json.loads(result.read_text(encoding="utf-8"))
    assert "error" not in out, [out.get("error"), proc.stderr[-3000:]]
    assert out["buffer"] == SOURCE.replace("    \n", "    return a + b\n", 1)
    assert out["point"] == [2, 16]
    assert out["counted"] is True
    assert (project / "add.py").read_text() == SOURCE  # the buffer, not the disk
