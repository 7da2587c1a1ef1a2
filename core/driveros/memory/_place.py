"""Where a workspace's memory lives, and which databases are never read as memory.

A repository can carry any file, a ``.agent-memory.db`` full of facts included, so memory
lives in the user's state directory by default (``<state>/memory/<repo>-<hash>.db``, one
file per repository identity, see :func:`~driveros.memory.scope_for`). A database inside
the workspace (``DRIVEROS_MEMORY_PATH`` or ``--path`` pointing there) is used only when
driveros created it for this user: the workspace is trusted, the file is a regular file
owned by the user, reached through no symbolic link, not tracked by git, and recorded in
the state directory when driveros created it. Anything else raises
:class:`~driveros.MemoryStoreError` and is never opened; a workspace database that is not
the one in use is reported (:attr:`Placement.notices`) and ignored.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from driveros._atomic import write_atomic
from driveros._errors import MemoryStoreError
from driveros.config import Environment
from driveros.memory._scope import DEFAULT_DB_NAME, git_output, scope_for
from driveros.state import file_lock, state_dir

log = logging.getLogger(__name__)

#: Below the state directory: the stores, the registry of workspace stores, check results.
MEMORY_DIR = "memory"
_REGISTRY = "workspace-stores.json"


def memory_dir(env: Environment | None = None) -> Path:
    """``<state>/memory``: where driveros keeps memory databases and what it knows of them."""
    environ = env.process_env if env is not None and env.process_env else None
    return state_dir(environ) / MEMORY_DIR


def default_db_path(scope: str, env: Environment | None = None) -> Path:
    """The memory database of the repository whose scope key is ``scope``:
    ``<state>/memory/<readable name>-<hash of the scope>.db``."""
    name = scope.split(":", 1)[-1]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-")[-48:].strip("._-") or "repo"
    digest = hashlib.sha256(scope.encode("utf-8")).hexdigest()[:16]
    return memory_dir(env) / f"{slug}-{digest}.db"


@dataclass(frozen=True)
class Placement:
    """The database a workspace's memory uses, its scope, and what was found and ignored."""

    path: Path
    scope: str
    #: True when ``path`` is inside the workspace (checked: see the module docs).
    in_workspace: bool = False
    #: Databases found in the workspace and not read, one sentence each.
    notices: tuple[str, ...] = ()
    #: True for the state directory's own database of the repository (only this user's
    #: driveros writes there).
    default: bool = False


def _inside(workspace: Path, path: Path) -> Path | None:
    """``path`` relative to ``workspace`` when it lies inside it (lexically or resolved)."""
    ws = Path(os.path.normpath(workspace.absolute()))
    target = Path(os.path.normpath(path if path.is_absolute() else ws / path))
    for base, candidate in ((ws, target), (ws.resolve(), target.resolve())):
        if candidate.is_relative_to(base):
            return candidate.relative_to(base)
    return None


def _no_links(workspace: Path, rel: Path) -> bool:
    """No component from the workspace down to ``rel`` is a symbolic link."""
    current = workspace.resolve()
    for part in rel.parts:
        current = current / part
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return False
        except FileNotFoundError:
            return True
    return True


def _registry(env: Environment | None) -> Path:
    return memory_dir(env) / _REGISTRY


def _read_registry(path: Path) -> dict[str, list[int]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    stores = data.get("stores") if isinstance(data, dict) else None
    return dict(stores) if isinstance(stores, dict) else {}


async def record_created(db: Path, env: Environment | None) -> None:
    """Remember that driveros created the database ``db`` (its device and inode)."""
    registry = _registry(env)

    def update() -> None:
        registry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(db)
        stores = _read_registry(registry)
        stores[str(db.resolve())] = [st.st_dev, st.st_ino]
        payload = json.dumps({"stores": stores}, indent=2, sort_keys=True).encode()
        write_atomic(registry, payload, perms=0o600)

    await asyncio.to_thread(registry.parent.mkdir, mode=0o700, parents=True, exist_ok=True)
    async with file_lock(registry.with_suffix(".lock")):
        await asyncio.to_thread(update)


def _refused(db: Path, why: str, default: Path) -> MemoryStoreError:
    return MemoryStoreError(
        f"memory database {db} is not read: {why} (driveros keeps this repository's "
        f"memory in {default}; see docs/memory.md, Where it lives)",
        path=str(db),
        op="open",
    )


async def check_workspace_store(
    workspace: Path, db: Path, env: Environment | None, *, default: Path
) -> None:
    """Raise unless ``db`` (inside ``workspace``) may be used as memory (module docs)."""
    rel = await asyncio.to_thread(_inside, workspace, db)
    assert rel is not None
    if env is None or not env.workspace_trusted:
        raise _refused(db, "it is inside a workspace that is not trusted", default)
    if not await asyncio.to_thread(_no_links, workspace, rel):
        raise _refused(db, "a symbolic link leads to it", default)
    try:
        st = await asyncio.to_thread(os.lstat, db)
    except FileNotFoundError:
        st = None
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            raise _refused(db, "it is not a regular file", default)
        if st.st_uid != os.getuid():
            raise _refused(db, "it belongs to another user", default)
    for suffix in ("-wal", "-shm", "-journal"):  # SQLite writes these beside it
        try:
            side = await asyncio.to_thread(os.lstat, f"{db}{suffix}")
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(side.st_mode) or side.st_uid != os.getuid():
            raise _refused(db, f"its {suffix} file is not a regular file of yours", default)
    names = [db.name, f"{db.name}-wal", f"{db.name}-shm", f"{db.name}-journal"]
    tracked = await git_output(db.parent, "ls-files", "--", *names)
    if tracked:
        raise _refused(db, "it is tracked by git (the repository's own file)", default)
    if st is not None and not await asyncio.to_thread(registered, db, env):
        raise _refused(db, "driveros did not create it for you", default)


def registered(db: Path, env: Environment | None) -> bool:
    """``db`` is the very file (device and inode) driveros recorded creating. Blocking."""
    try:
        st = os.lstat(db)
    except OSError:
        return False
    return _read_registry(_registry(env)).get(str(db.resolve())) == [st.st_dev, st.st_ino]


def _legacy_notice(legacy: Path) -> str:
    return (
        f"ignored {legacy}: a memory database inside the workspace is never read as memory. "
        f"If your own driveros wrote it (older versions kept memory there), bring its facts "
        f"over with `driveros memory export --path {legacy} -o facts.json` and "
        f"`driveros memory import facts.json`, then delete it"
    )


def _choose(
    workspace: Path, env: Environment | None, path: Path | None, default: Path
) -> tuple[Path, Path, bool]:
    """The database to use, the workspace's legacy database path, and whether the first
    lies inside the workspace. Blocking."""
    chosen = path
    if chosen is None and env is not None and env.memory_path:
        chosen = Path(env.memory_path).expanduser()
    if chosen is None:
        chosen = default
    elif not chosen.is_absolute():
        chosen = workspace.absolute() / chosen
    legacy = workspace.absolute() / DEFAULT_DB_NAME
    return chosen, legacy, _inside(workspace, chosen) is not None


async def place_store(
    workspace: Path, env: Environment | None, *, path: Path | None = None, inspect: bool = False
) -> Placement:
    """The database ``workspace``'s memory uses: ``path``, else ``DRIVEROS_MEMORY_PATH``
    (relative to the workspace), else the state directory's file for its repository.

    A database inside the workspace must pass :func:`check_workspace_store` (raises
    :class:`~driveros.MemoryStoreError` otherwise) unless ``inspect`` (the user named the
    file to read it as data, never as memory: ``export`` and ``doctor``). A
    ``.agent-memory.db`` in the workspace that is not the one in use becomes a notice.
    """
    scope = await scope_for(workspace)
    default = default_db_path(scope, env)
    chosen, legacy, inside = await asyncio.to_thread(_choose, workspace, env, path, default)
    if inside and not inspect and chosen != default:
        await check_workspace_store(workspace, chosen, env, default=default)
    notices: list[str] = []
    if legacy != chosen and await asyncio.to_thread(os.path.lexists, legacy):
        notices.append(_legacy_notice(legacy))
        log.warning("memory: %s", notices[-1])
    return Placement(
        path=chosen,
        scope=scope,
        in_workspace=inside,
        notices=tuple(notices),
        default=chosen == default,
    )
