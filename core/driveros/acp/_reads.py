"""Which workspace paths ``driveros acp`` may ask the editor about, and which buffers it may
overlay.

The model names paths; the editor opens what ``fs/read_text_file`` names. So before asking,
the agent runs the sandbox's path checks (:func:`read_problem`): inside the workspace, no
symbolic link at any component, nothing in ``.git``, no secret file (the sandbox's deny list),
a regular file (never a FIFO or a device, which can hang the editor). A path that fails is
never asked about: the run reads the disk through the sandbox, which refuses it the same way.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from urllib.parse import unquote, urlparse

from driveros.review import path_problem
from driveros.sandbox import secret_path_reason


def inside(root: Path, uri: str) -> str | None:
    """The workspace-relative path a ``file://`` URI names, None when it is elsewhere."""
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    path = Path(unquote(parsed.path))
    if not path.is_absolute() or ".." in path.parts or "\x00" in str(path):
        return None
    try:
        rel = path.relative_to(root)
    except ValueError:
        return None
    return rel.as_posix() if rel.parts else None


def relative(root: Path, path: str) -> str | None:
    """The workspace-relative form of the absolute ``path``, None when it is elsewhere."""
    p = Path(path)
    if not p.is_absolute() or "\x00" in path or ".." in p.parts:
        return None
    try:
        rel = p.relative_to(root)
    except ValueError:
        return None
    return rel.as_posix() if rel.parts else None


def read_problem(root: Path, rel: str) -> str | None:
    """Why the editor must not be asked for the text of ``rel`` (relative to the workspace
    ``root``), or None when it may. Blocking (one ``lstat`` per component)."""
    parts = rel.split("/")
    if not rel or "\x00" in rel or any(p in ("", ".", "..") for p in parts):
        return "not a workspace-relative path"
    if any(p.lower() == ".git" for p in parts):
        return "inside .git"
    secret = secret_path_reason(rel)
    if secret is not None:
        return secret
    here = root
    mode = 0
    for part in parts:
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except OSError:
            return "not a file in the workspace"
        if stat.S_ISLNK(mode):
            return f"{here.relative_to(root).as_posix()} is a symbolic link"
    if not stat.S_ISREG(mode):
        return "not a regular file"
    return None


async def overlay_path(root: Path, uri: str, text: str | None) -> str | None:
    """The workspace-relative path a client buffer may overlay in the scratch copy, or None:
    outside the workspace, inside ``.git``, through a symbolic link, a directory, or text
    that is not valid Unicode (lone surrogates) is never an overlay (it stays context)."""
    rel = inside(root, uri)
    if rel is None or text is None:
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    problem = await asyncio.to_thread(path_problem, root, rel)
    if problem is not None or await asyncio.to_thread((root / rel).is_symlink):
        return None
    return rel
