"""``driveros agent --add-dir DIR[:rw]``: folders the run reaches besides its workspace.

Each becomes a :class:`~driveros.runs.AddedDir` (docs/cli.md, "More than one folder"): ``DIR``
is read-only (mounted read-only in the local sandbox at its own path; the file tools read it
by its absolute path and refuse to change it), ``DIR:rw`` writable (mounted writable at its
path; under ``--review`` it gets its own scratch view, reviewed with the workspace). It is
input, never configuration: none of its files (``.env``, ``.driveros.toml``, instruction or
command files, hooks) is read as settings, whatever its own trust. A folder holding a secret
file (docs/sandbox.md, "Secret files") is refused: its values could not be redacted from what
commands print.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from driveros._unicode import printable
from driveros.cli._parser import UsageError
from driveros.runs import AddedDir, secret_files
from driveros.trust import broad_root

#: Entries looked at per folder before giving up on checking it (then it is refused).
MAX_ENTRIES = 200_000


def add_add_dir_flag(add: Callable[..., Any]) -> None:
    add(
        "--add-dir",
        dest="add_dirs",
        action="append",
        default=[],
        metavar="DIR[:rw]",
        help="a folder the run may read besides the workspace, by its absolute path (read-only; "
        "DIR:rw: writable, reviewed with the workspace under --review; repeatable)",
    )


def _secrets(root: Path) -> list[str]:
    found = secret_files(root, limit=MAX_ENTRIES)
    if found is None:
        raise UsageError(
            f"driveros agent: error: --add-dir {printable(str(root))}: more than "
            f"{MAX_ENTRIES} entries; give a smaller folder"
        )
    return found


def parse_add_dirs(args: argparse.Namespace, workspace: Path, state: Path) -> list[AddedDir]:
    """The resolved ``--add-dir`` folders; UsageError for one that cannot be given."""
    out: list[AddedDir] = []
    state = Path(os.path.realpath(state))  # compared with resolved folders
    for given in args.add_dirs:
        writable = given.endswith(":rw")
        name = given.removesuffix(":rw")
        shown = printable(given)
        path = Path(name).expanduser()
        if not path.is_dir():
            raise UsageError(f"driveros agent: error: --add-dir {shown}: not a directory")
        path = path.resolve()
        # The rule of `driveros trust` (no root, system directory or home, nor one holding
        # a home), and never driveros' state directory, a folder holding it or inside it.
        wide = broad_root(path, Path.home())
        if wide is None and (state.is_relative_to(path) or path.is_relative_to(state)):
            wide = "it is, holds or lies inside driveros' state directory"
        if wide is not None:
            raise UsageError(f"driveros agent: error: --add-dir {shown}: too wide ({wide})")
        if path == workspace or path.is_relative_to(workspace) or workspace.is_relative_to(path):
            raise UsageError(
                f"driveros agent: error: --add-dir {shown}: overlaps the workspace {workspace}"
            )
        for other in out:
            if path.is_relative_to(other.path) or other.path.is_relative_to(path):
                raise UsageError(
                    f"driveros agent: error: --add-dir {shown}: overlaps the added folder "
                    f"{printable(str(other.path))}"
                )
        secret = _secrets(path)
        if secret:
            listed = ", ".join(printable(s) for s in secret[:5])
            raise UsageError(
                f"driveros agent: error: --add-dir {shown} holds secret files ({listed}); "
                "their values could not be redacted from what commands print; give a folder "
                "without them"
            )
        out.append(AddedDir(path=path, writable=writable))
    return out
