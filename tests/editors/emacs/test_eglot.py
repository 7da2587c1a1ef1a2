"""Emacs + eglot (issue 16): the README's eglot snippet, verbatim, in a real `emacs --batch`
against the real driveros-lsp and the scripted model: "Ask agent to fix" on a diagnostic, the
trace as log lines, the proposal accepted into the buffer."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

SCRIPT = Path(__file__).resolve().parent / "el" / "eglot_fix.el"
CALC = "def add(a, b):\n    return a - b\n"
TURNS = [
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
    {"text": "add() adds now."},
]


def readme_eglot_snippet() -> str:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    after = readme.split("Emacs (eglot):", 1)[1]
    found = re.search(r"```elisp\n(.*?)```", after, re.DOTALL)
    assert found, "the README has no eglot block"
    return found.group(1)


def emacs_binary() -> str:
    found = shutil.which("emacs")
    if not found or not Path("/usr/share/emacs/site-lisp/elpa").is_dir():
        pytest.fail("emacs with eglot not installed: apt-get install emacs-nox elpa-eglot")
    return found


@pytest.fixture
def scripted_model(tmp_path: Path) -> Iterator[str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(TURNS))
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


@pytest.mark.e2e
def test_eglot_readme_setup_fixes_a_diagnostic(tmp_path: Path, scripted_model: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / "calc.py").write_text(CALC)
    snippet = tmp_path / "init.el"
    snippet.write_text(readme_eglot_snippet())
    result = tmp_path / "result.json"
    env = {
        "HOME": str(tmp_path),
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "LANG": "C.UTF-8",
        "DRIVEROS_SNIPPET": str(snippet),
        "DRIVEROS_FILE": str(project / "calc.py"),
        "RESULT": str(result),
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": scripted_model,
        "OPENAI_MODEL": "scripted-model",
    }
    proc = subprocess.run(
        [emacs_binary(), "--batch", "-Q", "-l", str(SCRIPT)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.exists(), proc.stderr[-3000:]
    out = json.loads(result.read_text(encoding="utf-8"))
    assert "error" not in out, [out.get("error"), proc.stderr[-3000:]]
    assert out["mode"] == "python-mode"
    assert "driveros-lsp" in out["contact"]  # started from the README's entry
    assert "Ask agent to fix: add() subtracts instead of adding" in out["titles"]
    assert out["state"] == "proposed"
    assert out["buffer"] == CALC.replace("a - b", "a + b")
    assert out["modified"] is True
    assert (project / "calc.py").read_text() == CALC  # in the buffer, not on disk
    # eglot has no trace view: the trace arrives as window/logMessage lines
    events = out["events"]
    assert "window/logMessage" in events
    assert re.search(r"\[driveros \w+\] .*edit_file", events), events[-2000:]
