"""Where driveros keeps the state of its runs, and the small file helpers around it."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from driveros._atomic import write_atomic

# the variable that overrides the state directory (tests, several installs) is named and
# read in driveros.config
from driveros.config import STATE_DIR_VAR as STATE_DIR_VAR
from driveros.config import switches


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """The state directory: ``$DRIVEROS_STATE_DIR``, else ``$XDG_STATE_HOME/driveros``,
    else ``~/.local/state/driveros``. Not created here."""
    environ = os.environ if env is None else env
    explicit = switches(environ).state_dir
    if explicit:
        return Path(explicit).expanduser().absolute()
    xdg = environ.get("XDG_STATE_HOME", "").strip()
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "driveros"
    return Path.home() / ".local" / "state" / "driveros"


def ensure_dir(path: Path) -> Path:
    """Create ``path`` (and parents) private to the user; returns it. Blocking."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``data`` as JSON to ``path`` atomically (temp file in the same directory)."""
    write_atomic(path, json.dumps(data, sort_keys=True).encode("utf-8"), perms=0o600)
