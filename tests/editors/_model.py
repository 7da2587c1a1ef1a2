"""The scripted model the editor tests talk to, shared by every editor's tests: a loopback
server (``driveros.testing.scripted``) in its own process group, and the environment that
points an editor's driveros-lsp at it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: The driveros-lsp of this venv.
DRIVEROS_LSP = Path(sys.executable).with_name("driveros-lsp")


@contextlib.contextmanager
def model_server(script: Any, where: Path) -> Iterator[str]:
    """A loopback model playing ``script`` (a list of turns, or ``{"turns": ..., ...}``),
    written to ``where``; yields its OpenAI base URL and stops its process group after."""
    where.write_text(json.dumps(script))
    proc = subprocess.Popen(
        [sys.executable, "-m", "driveros.testing.scripted", "--script", str(where)],
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


def write_turn(path: str, content: str) -> dict[str, object]:
    """A scripted turn that calls ``write_file`` once."""
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


def model_env(url: str, *, model: str | None = "scripted-model") -> dict[str, str]:
    """The variables that point the openai provider at ``url`` (and name ``model``)."""
    env = {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": url}
    if model is not None:
        env["OPENAI_MODEL"] = model
    return env


def venv_path() -> str:
    """``PATH`` with this venv's bin first (driveros-lsp, the language servers)."""
    return f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
