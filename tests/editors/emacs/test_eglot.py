"""Emacs + eglot (issue 29, row 1): the README's eglot snippet, verbatim, in a real
`emacs --batch`: ``driveros-lsp --wrap -- pyright-langserver --stdio`` against the scripted
model. eglot's own flow, nothing built by hand: flymake shows pyright's diagnostic,
``eglot-code-actions`` at point lists "Ask agent to fix", the run proposes, "Accept agent
proposal" from the same menu edits the buffer and leaves the disk alone."""

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

SCRIPT = Path(__file__).resolve().parent / "el" / "eglot_wrap.el"
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
def test_eglot_readme_setup_fixes_a_pyright_diagnostic(tmp_path: Path, scripted_model: str) -> None:
    snippet = readme_eglot_snippet()
    assert '"--wrap" "--" "pyright-langserver"' in snippet
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / "calc.py").write_text(CALC)
    init = tmp_path / "init.el"
    init.write_text(snippet)
    result = tmp_path / "result.json"
    env = {
        "HOME": str(tmp_path),
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "LANG": "C.UTF-8",
        "DRIVEROS_SNIPPET": str(init),
        "DRIVEROS_FILE": str(project / "calc.py"),
        "RESULT": str(result),
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": scripted_model,
        "OPENAI_MODEL": "scripted-model",
        "DRIVEROS_STATE_DIR": str(tmp_path / "state"),
    }
    proc = subprocess.run(
        [emacs_binary(), "--batch", "-Q", "-l", str(SCRIPT)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert result.exists(), proc.stderr[-3000:]
    out = json.loads(result.read_text(encoding="utf-8"))
    assert "error" not in out, [out.get("error"), out.get("events"), proc.stderr[-3000:]]
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
