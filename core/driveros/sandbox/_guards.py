"""What a sandbox that writes a tree in place guards in it, in both tiers (docs/sandbox.md,
"The local boundary"): every ``.git`` and the ``.driveros`` directory are mounted read-only
over the writable tree, so no command plants a git hook, a ``core.fsmonitor`` or the
``.driveros/hooks.toml`` that the user's next ``git`` or trusted run would run on the host;
where a tree had no ``.driveros``, a ``hooks.toml`` made there is renamed aside at close.
The local tier binds :func:`guard_entries` with bubblewrap, the docker tier as volumes.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path

from driveros.sandbox._paths import HOOKS_FILE_NAME, STATE_DIR_NAME, is_git_name


def guard_entries(root: Path, *, git: bool = True) -> list[Path]:
    """What is mounted read-only over ``root`` written in place: its ``.git`` entries
    (unless not ``git``: a review view, whose ``.git`` is never proposed) and its
    ``.driveros``. Blocking: ``root`` is walked."""
    return [*(git_entries(root) if git else []), *driveros_dir(root)]


def unguarded_roots(roots: Iterable[Path]) -> list[Path]:
    """The ``roots`` written in place that have no ``.driveros`` to mount read-only (see
    :func:`refuse_made_hooks`). Blocking."""
    return [root for root in roots if not driveros_dir(root)]


def refuse_made_hooks(roots: Iterable[Path]) -> list[Path]:
    """After the sandbox is gone: a ``.driveros/hooks.toml`` in ``roots`` (trees that had
    no ``.driveros``) was made by a command; renamed aside. The new paths. Blocking."""
    moved: list[Path] = []
    for root in roots:
        aside = refuse_planted_hooks(root)
        if aside is not None:
            moved.append(root / aside)
    return moved


def driveros_dir(workspace: Path) -> list[Path]:
    """The workspace's ``.driveros`` directory when it is one, bound read-only: a trusted
    workspace's ``.driveros/hooks.toml`` runs as the user outside the sandbox, so no command
    may write it (nor rename the directory away and make a new one). Where there is none,
    :func:`refuse_planted_hooks` undoes what a command made. Blocking."""
    path = workspace / STATE_DIR_NAME
    try:
        return [path] if stat.S_ISDIR(path.lstat().st_mode) else []
    except OSError:
        return []


def refuse_planted_hooks(workspace: Path) -> str | None:
    """After a sandbox whose workspace had no ``.driveros``: a ``.driveros/hooks.toml``
    there now was made by a command (or the user, meanwhile); it is renamed aside, never
    followed through a link, so the next trusted run does not run it on the host. The new
    name, or None. Blocking."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(workspace / STATE_DIR_NAME, flags)
    except OSError:
        return None
    try:
        names = [n for n in os.listdir(fd) if n.casefold() == HOOKS_FILE_NAME]  # noqa: PTH208
        for name in names:
            aside = f"{name}.refused-{secrets.token_hex(4)}"
            os.rename(name, aside, src_dir_fd=fd, dst_dir_fd=fd)
            return f"{STATE_DIR_NAME}/{aside}"
    except OSError:
        return None
    finally:
        os.close(fd)
    return None


#: Directories :func:`git_entries` looks through at most.
MAX_GIT_SCAN_DIRS = 20_000


def git_entries(workspace: Path) -> list[Path]:
    """Every ``.git`` (any spelling, a directory or a pointer file, at any depth; not a link)
    in ``workspace``: bound read-only over the writable workspace, so a command cannot plant
    a hook or ``core.fsmonitor`` that the user's next ``git status`` runs on the host, nor
    repoint a ``.git`` file. Skips ``node_modules``; stops after :data:`MAX_GIT_SCAN_DIRS`
    directories. Blocking."""
    found: list[Path] = []
    for visited, (top, dirs, files) in enumerate(os.walk(workspace, followlinks=False)):
        for name in [*dirs, *files]:
            if not is_git_name(name):
                continue
            path = Path(top, name)
            try:
                mode = path.lstat().st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
                found.append(path)
        dirs[:] = [d for d in dirs if not is_git_name(d) and d != "node_modules"]
        if visited >= MAX_GIT_SCAN_DIRS:
            break
    return found
