"""Hook files: ``hooks.toml`` in the user's config directory and a trusted workspace's
``.driveros/hooks.toml``, each a list of ``[[hooks]]`` tables.

A workspace's file is read only when the workspace is trusted, without following a link; an
untrusted workspace's is never read (a notice says it was ignored). A file that does not
parse is a configuration error of that file: its hooks are not used and the notice says why
(a broken hooks file is never read as "no hooks" silently).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from driveros._safe_open import PlantedLinkError, open_file

HookEvent = Literal["pre_tool", "post_tool", "run_start", "run_end"]
#: The user's file, in the driveros config directory.
USER_FILE = "hooks.toml"
#: A trusted workspace's file.
WORKSPACE_FILE = ".driveros/hooks.toml"
_MAX_BYTES = 256 * 1024


class HookSpec(BaseModel):
    """One ``[[hooks]]`` table."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    event: HookEvent
    #: Tool names it applies to (pre_tool, post_tool); None: every tool.
    tools: tuple[str, ...] | None = None
    #: A string run by ``/bin/sh -c``, or an argv list.
    command: str | tuple[str, ...] = Field(min_length=1)
    timeout_s: float = Field(default=30.0, gt=0, le=3600)
    #: Where it was declared (``user:hooks.toml``, ``workspace:.driveros/hooks.toml``).
    origin: str = ""

    def applies(self, event: HookEvent, tool: str | None) -> bool:
        if self.event != event:
            return False
        return self.tools is None or tool is None or tool in self.tools

    @property
    def shown(self) -> str:
        return self.command if isinstance(self.command, str) else " ".join(self.command)


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hooks: list[HookSpec] = Field(default_factory=list)


class HookSet(BaseModel):
    """The hooks of a run and what the user should know about the files read."""

    model_config = ConfigDict(frozen=True)

    hooks: tuple[HookSpec, ...] = ()
    #: The directory hooks run in (the user's workspace).
    cwd: str = "."
    notices: tuple[str, ...] = ()

    def matching(self, event: HookEvent, tool: str | None = None) -> list[HookSpec]:
        return [h for h in self.hooks if h.applies(event, tool)]


def _read(root: Path, rel: str) -> str | None:
    try:
        fd = open_file(root, rel, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(_MAX_BYTES + 1)
    if len(data) > _MAX_BYTES:
        raise ValueError(f"larger than {_MAX_BYTES} bytes")
    return data.decode("utf-8")


def _parse(root: Path, rel: str, origin: str, notices: list[str]) -> list[HookSpec]:
    try:
        text = _read(root, rel)
        if text is None:
            return []
        parsed = _File.model_validate(tomllib.loads(text))
    except (PlantedLinkError, OSError, ValueError, tomllib.TOMLDecodeError) as exc:
        # ValidationError is a ValueError
        what = str(exc).splitlines()[0] if not isinstance(exc, ValidationError) else str(exc)
        notices.append(f"{origin}: not used: {what}")
        return []
    return [h.model_copy(update={"origin": origin}) for h in parsed.hooks]


def load_hooks(workspace: Path, *, user_dir: Path | None, trusted: bool) -> HookSet:
    """The user's hooks, then (``trusted`` only) the workspace's. Blocking."""
    notices: list[str] = []
    hooks: list[HookSpec] = []
    if user_dir is not None:
        hooks += _parse(user_dir, USER_FILE, f"user:{user_dir / USER_FILE}", notices)
    workspace_file = workspace / WORKSPACE_FILE
    if trusted:
        hooks += _parse(workspace, WORKSPACE_FILE, f"workspace:{WORKSPACE_FILE}", notices)
    elif workspace_file.is_file() or workspace_file.is_symlink():
        notices.append(f"{WORKSPACE_FILE}: ignored: the workspace is not trusted (driveros trust)")
    return HookSet(hooks=tuple(hooks), cwd=str(workspace), notices=tuple(notices))
