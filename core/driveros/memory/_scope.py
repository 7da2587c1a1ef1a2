"""Which repository a workspace's facts belong to, and keeping a workspace store out of git.

The scope key survives moves and clones: the ``origin`` remote (credentials stripped) when
there is one, else the repository's first root commit, else the resolved directory path.
"""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path

from driveros import _safe_open as safe_open
from driveros._errors import GitError
from driveros._git import run_git
from driveros._safe_open import PlantedLinkError, anchor

log = logging.getLogger(__name__)

DEFAULT_DB_NAME = ".agent-memory.db"
_GIT_TIMEOUT = 10.0


async def git_output(cwd: Path, *args: str) -> str | None:
    """git's stripped stdout, or None when it fails, times out or cannot be started."""
    try:
        done = await run_git(args, cwd=cwd, check=False, timeout=_GIT_TIMEOUT)
    except (GitError, TimeoutError):
        return None
    return done.text.strip() if done.returncode == 0 else None


def normalize_remote(url: str) -> str:
    """``git@github.com:Org/x.git`` and ``https://user:tok@github.com/Org/x`` → one key."""
    url = url.strip()
    scp = re.match(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$", url)
    if scp and "://" not in url:
        host, path = scp.group(1), scp.group(2)
    else:
        rest = url.split("://", 1)[-1]
        rest = rest.rsplit("@", 1)[-1] if "@" in rest.split("/", 1)[0] else rest
        host, _, path = rest.partition("/")
    path = path.strip("/").removesuffix(".git")
    return f"{host.lower()}/{path}"


async def scope_for(workspace: Path) -> str:
    """The scope key of the repository containing ``workspace`` (see module docs)."""
    root = await asyncio.to_thread(workspace.resolve)
    top = await git_output(root, "rev-parse", "--show-toplevel")
    if top is None:
        return f"path:{root}"
    remote = await git_output(root, "config", "--get", "remote.origin.url")
    if remote:
        return f"git:{normalize_remote(remote)}"
    roots = await git_output(root, "rev-list", "--max-parents=0", "HEAD")
    if roots:
        return f"commit:{sorted(roots.split())[0]}"
    return f"path:{await asyncio.to_thread(Path(top).resolve)}"


async def exclude_from_git(db_path: Path) -> bool:
    """Add the database (and its -wal/-shm files) to ``.git/info/exclude`` when inside a repo.

    Uses the repository's local exclude file, never the tracked ``.gitignore``. Returns True
    when a line was added.
    """
    parent = await asyncio.to_thread(db_path.parent.resolve)
    top = await git_output(parent, "rev-parse", "--show-toplevel")
    if top is None:
        return False
    if await git_output(parent, "check-ignore", "-q", db_path.name) is not None:
        return False
    db_real, top_real = await asyncio.to_thread(lambda: (db_path.resolve(), Path(top).resolve()))
    if not db_real.is_relative_to(top_real):
        return False
    rel = db_real.relative_to(top_real).as_posix()
    exclude_rel = await git_output(parent, "rev-parse", "--git-path", "info/exclude")
    if not exclude_rel:
        return False
    exclude = Path(exclude_rel)
    if not exclude.is_absolute():
        exclude = parent / exclude
    # Walked from the top without following a link: a repository can plant
    # ``.git/info -> ~`` or ``.git/info/exclude -> ~/.bashrc`` (a git directory outside the
    # work tree, a worktree's, is the user's own: only its last name is checked).
    root, where = anchor(exclude, top_real)

    def write() -> None:
        old = safe_open.read_bytes(root, where) or b""
        sep = b"" if not old or old.endswith(b"\n") else b"\n"
        line = f"# driveros long-term memory\n/{rel}*\n".encode()
        safe_open.append(root, where, sep + line, perms=0o644)

    try:
        await asyncio.to_thread(write)
    except (OSError, PlantedLinkError) as exc:
        log.warning("could not add %s to %s: %s", rel, exclude, exc)
        return False
    return True
