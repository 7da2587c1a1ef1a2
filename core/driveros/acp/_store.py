"""Sessions kept across server processes, so ``session/load`` finds a session an earlier
``driveros acp`` served (an editor restarts its agents).

One JSON file per session in the state directory (``acp-sessions/<id>.json``, mode 0600):
the workspace, the mode, the updates sent (replayed by a load), the model conversation and
the feedback the next prompt owes the model. Never the MCP servers (their ``env`` and
``headers`` hold tokens: a load names its own). The files are input when read back: a file
that does not validate, or names another workspace, is no session. ``driveros gc`` (and every
start's garbage collection) removes the sessions past the retention (``driveros.state``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from driveros._atomic import write_atomic
from driveros.acp._modes import ModeId
from driveros.acp._updates import Update
from driveros.llm import Message
from driveros.state import SESSIONS_DIR, state_dir

log = logging.getLogger(__name__)

#: A file larger than this is not read back (bytes).
MAX_FILE = 64 * 1024 * 1024
_ID = re.compile(r"[0-9a-f]{32}")
_UPDATES: TypeAdapter[list[Update]] = TypeAdapter(
    list[Annotated[Update, Field(discriminator="session_update")]]
)
_HISTORY: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


class Stored(BaseModel):
    """What is kept of one session."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    cwd: str
    mode: ModeId
    updates: list[Any] = Field(default_factory=list)
    history: list[Any] = Field(default_factory=list)
    feedback: list[str] = Field(default_factory=list)
    edits: Literal["allow", "reject"] | None = None


def _file(session_id: str) -> Path | None:
    if not _ID.fullmatch(session_id):
        return None
    return state_dir() / SESSIONS_DIR / f"{session_id}.json"


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(path, data, perms=0o600, prefix="session-", suffix="")


async def save(
    session_id: str,
    *,
    cwd: Path,
    mode: ModeId,
    updates: list[Update],
    history: list[Message],
    feedback: list[str],
    edits: Literal["allow", "reject"] | None,
) -> None:
    """Keep the session (a failure costs one log line: the session still works here)."""
    path = _file(session_id)
    if path is None:
        return
    stored = Stored(
        cwd=str(cwd),
        mode=mode,
        updates=_UPDATES.dump_python(list(updates), mode="json", by_alias=True),
        history=_HISTORY.dump_python(list(history), mode="json"),
        feedback=list(feedback),
        edits=edits,
    )
    data = stored.model_dump_json().encode("utf-8")
    try:
        await asyncio.to_thread(_write, path, data)
    except OSError as exc:
        log.warning("cannot keep session %s for a later load: %s", session_id, exc)


def _read(path: Path) -> bytes | None:
    try:
        if path.stat().st_size > MAX_FILE:
            return None
        return path.read_bytes()
    except OSError:
        return None


async def load(session_id: str, cwd: Path) -> tuple[Stored, list[Update], list[Message]] | None:
    """The kept session ``session_id`` of workspace ``cwd``, or None (unknown, unreadable,
    invalid, or another workspace's)."""
    path = _file(session_id)
    if path is None:
        return None
    data = await asyncio.to_thread(_read, path)
    if data is None:
        return None
    try:
        stored = Stored.model_validate(json.loads(data))
        updates = _UPDATES.validate_python(stored.updates)
        history = _HISTORY.validate_python(stored.history)
    except (ValueError, ValidationError, RecursionError) as exc:
        log.warning("ignoring the kept session %s: %s", session_id, str(exc).splitlines()[0])
        return None
    if stored.cwd != str(cwd):
        return None
    return stored, updates, history
