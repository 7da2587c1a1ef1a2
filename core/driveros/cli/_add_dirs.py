"""``driveros agent --add-dir DIR``: a folder the run may read besides its workspace.

It is mounted read-only in the local sandbox at its own path (commands read it there; the file
tools stay fenced to the workspace). It is input, never configuration: none of its files
(``.env``, ``.driveros.toml``, instruction or command files) is read as settings, whatever its
own trust. A folder holding a secret file (docs/sandbox.md, "Secret files") is refused: its
values could not be redacted from what commands print. ``DIR:rw`` (a second writable folder
with its own scratch view) is not supported yet.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from driveros._unicode import printable
from driveros.cli._parser import UsageError
from driveros.sandbox import secret_path_reason

#: Entries looked at per folder before giving up on checking it (then it is refused).
MAX_ENTRIES = 200_000
_SKIP = {".git", "node_modules", "__pycache__"}


def add_add_dir_flag(add: Callable[..., Any]) -> None:
    add(
        "--add-dir",
        dest="add_dirs",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder the run may read besides the workspace (mounted read-only in the local "
        "sandbox; repeatable)",
    )


def _secrets(root: Path) -> list[str]:
    found: list[str] = []
    seen = 0
    for top, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP]
        for name in [*names, *dirs]:
            seen += 1
            rel = (Path(top) / name).relative_to(root).as_posix()
            if secret_path_reason(rel) is not None:
                found.append(rel)
        if seen > MAX_ENTRIES:
            raise UsageError(
                f"driveros agent: error: --add-dir {printable(str(root))}: more than "
                f"{MAX_ENTRIES} entries; give a smaller folder"
            )
    return sorted(found)


def parse_add_dirs(args: argparse.Namespace, workspace: Path, state: Path) -> list[Path]:
    """The resolved ``--add-dir`` folders; UsageError for one that cannot be given."""
    out: list[Path] = []
    for given in args.add_dirs:
        if given.endswith(":rw"):
            raise UsageError(
                "driveros agent: error: --add-dir DIR:rw (a writable second folder) is not "
                "supported yet; give DIR for read-only context"
            )
        shown = printable(given)
        path = Path(given).expanduser()
        if not path.is_dir():
            raise UsageError(f"driveros agent: error: --add-dir {shown}: not a directory")
        path = path.resolve()
        if path == Path("/") or path == Path.home() or state.is_relative_to(path):
            raise UsageError(
                f"driveros agent: error: --add-dir {shown}: too wide (it holds your home, the "
                "root or driveros' state directory)"
            )
        if path == workspace or path.is_relative_to(workspace) or workspace.is_relative_to(path):
            raise UsageError(
                f"driveros agent: error: --add-dir {shown}: overlaps the workspace {workspace}"
            )
        secret = _secrets(path)
        if secret:
            listed = ", ".join(printable(s) for s in secret[:5])
            raise UsageError(
                f"driveros agent: error: --add-dir {shown} holds secret files ({listed}); "
                "their values could not be redacted from what commands print; give a folder "
                "without them"
            )
        out.append(path)
    return out
