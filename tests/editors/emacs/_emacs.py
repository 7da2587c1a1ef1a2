"""Run a real ``emacs --batch`` (emacs-nox with elpa-eglot) on one of ``el/``'s scripts."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.editors._model import venv_path

EL_DIR = Path(__file__).resolve().parent / "el"


def emacs_binary() -> str:
    found = shutil.which("emacs")
    if not found or not Path("/usr/share/emacs/site-lisp/elpa").is_dir():
        pytest.fail("emacs with eglot not installed: apt-get install emacs-nox elpa-eglot")
    return found


def run_emacs(
    script: str,
    *,
    project: Path,
    home: Path,
    snippet: Path,
    file: Path,
    env: Mapping[str, str],
    timeout: float,
) -> tuple[dict[str, Any], str]:
    """Run ``el/<script>`` in ``project`` with ``snippet`` as the user's setup and ``file`` to
    open (``$DRIVEROS_SNIPPET``, ``$DRIVEROS_FILE``), this venv's bin first on ``PATH``;
    the JSON it writes to ``$RESULT`` and Emacs's stderr."""
    result = home / "result.json"
    full = {
        "HOME": str(home),
        "PATH": venv_path(),
        "LANG": "C.UTF-8",
        "DRIVEROS_SNIPPET": str(snippet),
        "DRIVEROS_FILE": str(file),
        "RESULT": str(result),
        **env,
    }
    proc = subprocess.run(
        [emacs_binary(), "--batch", "-Q", "-l", str(EL_DIR / script)],
        cwd=project,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.exists(), proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
    return out, proc.stderr
