"""The user's directories, read from an environment mapping (default: the process's).

A leaf: it imports nothing from driveros, so the environment reader (:mod:`driveros.config`)
and the stores that live in these directories (:mod:`driveros.trust`, MCP settings) can both
depend on it without depending on each other.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def user_home(environ: Mapping[str, str] | None = None) -> Path:
    """The user's home directory (``HOME``, else the password database)."""
    env = os.environ if environ is None else environ
    home = env.get("HOME")
    return Path(home) if home and Path(home).is_absolute() else Path.home()


def user_config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/driveros``, or ``~/.config/driveros`` (the trust store and the user's
    provider settings live here)."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else user_home(env) / ".config"
    return base / "driveros"
