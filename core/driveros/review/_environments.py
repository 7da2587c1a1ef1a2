"""The project's environments (virtualenvs, node_modules) seen from a scratch copy.

They are ignored and never copied; instead each one that exists at the top of the user's
workspace is linked into the copy (a symlink to the original), so the project's own
interpreter, test runner and build tools work there. The links are excluded from the
copy's bookkeeping: never reported as changes, never applied, never committed.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Top-level directories linked into a scratch copy when the workspace has them (and the copy
#: does not). The Python names count only when they hold ``pyvenv.cfg`` (a real virtualenv).
ENVIRONMENT_DIRS: tuple[str, ...] = (".venv", "venv", "env", "node_modules")
_VENV_MARKER = "pyvenv.cfg"


def is_environment(src: Path, name: str) -> bool:
    if not src.is_dir():
        return False
    return name == "node_modules" or (src / _VENV_MARKER).is_file()


def link_environments(workspace: Path, copy: Path) -> list[str]:
    """Link each environment directory of ``workspace`` into ``copy``; the names linked."""
    linked: list[str] = []
    for name in ENVIRONMENT_DIRS:
        src = workspace / name
        dst = copy / name
        if os.path.lexists(dst) or not is_environment(src, name):
            continue  # tracked or copied already (then it is source), or not an environment
        dst.symlink_to(src, target_is_directory=True)
        linked.append(name)
    return linked


def exclude_lines(prefix: str, names: list[str]) -> str:
    """gitignore lines matching exactly the links (a symlink is not matched by ``name/``)."""
    return "".join(f"/{prefix}{name}\n" for name in names)
