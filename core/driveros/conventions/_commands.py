"""Custom commands: ``NAME.md`` prompt templates the user saves.

A command is a Markdown file whose body, after substitution, is a run's task. Optional YAML
front matter (between ``---`` lines) carries ``description``, ``argument-hint``, ``approve``
and ``review``. ``$ARGUMENTS`` becomes every argument joined by spaces, ``$1`` … ``$9`` the
positional ones (missing ones become ""). Sources, weakest first: the user's
``~/.config/driveros/commands/`` and, in a trusted workspace only, ``.driveros/commands/``
(a workspace command of the same name wins there). An untrusted workspace's commands are
never read. A file that is not a valid command is skipped with a notice.

Blocking: call :func:`load_commands` through ``asyncio.to_thread``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from driveros._errors import ConfigError
from driveros._safe_open import PlantedLinkError, open_file

#: Where a trusted workspace keeps its commands.
WORKSPACE_DIR = ".driveros/commands"
#: Where the user keeps theirs, under the driveros config directory.
USER_DIR = "commands"
#: A command file larger than this is skipped.
MAX_COMMAND_BYTES = 64 * 1024
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)


class CommandMeta(BaseModel):
    """A command's front matter."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    description: str = ""
    argument_hint: str = Field(default="", alias="argument-hint")
    approve: Literal["ask", "policy", "never"] | None = None
    review: bool | None = None


class CustomCommand(BaseModel):
    """One saved command."""

    model_config = ConfigDict(frozen=True)

    name: str
    source: Literal["user", "workspace"]
    path: str
    body: str
    meta: CommandMeta = Field(default_factory=CommandMeta)

    def task(self, arguments: Sequence[str] | str = ()) -> str:
        """The body with ``$ARGUMENTS`` and ``$1…$9`` substituted (a string is split on
        whitespace for the positional ones)."""
        args = arguments.split() if isinstance(arguments, str) else list(arguments)
        joined = arguments.strip() if isinstance(arguments, str) else " ".join(args)

        def positional(match: re.Match[str]) -> str:
            index = int(match.group(1)) - 1
            return args[index] if index < len(args) else ""

        text = self.body.replace("$ARGUMENTS", joined)
        return re.sub(r"\$([1-9])(?![0-9])", positional, text).strip()


def parse_command(
    name: str, text: str, *, source: Literal["user", "workspace"], path: str
) -> CustomCommand:
    """A command from its file's text; :class:`ConfigError` when the front matter is bad."""
    meta = CommandMeta()
    body = text
    match = _FRONT.match(text)
    if match:
        try:
            data = yaml.safe_load(match.group(1)) or {}
            if not isinstance(data, dict):
                raise ConfigError(f"{path}: the front matter is not a mapping")
            meta = CommandMeta.model_validate(data)
        except (yaml.YAMLError, ValidationError) as exc:
            raise ConfigError(f"{path}: invalid front matter: {exc}") from exc
        body = text[match.end() :]
    return CustomCommand(name=name, source=source, path=path, body=body, meta=meta)


def _read_dir(
    root: Path, rel: str, source: Literal["user", "workspace"], notices: list[str]
) -> dict[str, CustomCommand]:
    found: dict[str, CustomCommand] = {}
    try:
        names = sorted(p.name for p in (root / rel).iterdir())
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return found
    for entry in names:
        name = entry.removesuffix(".md")
        if not entry.endswith(".md") or not _NAME.match(name):
            continue
        shown = f"{rel}/{entry}"
        try:
            fd = open_file(root, shown, os.O_RDONLY)
        except (FileNotFoundError, PlantedLinkError, PermissionError) as exc:
            notices.append(f"{shown}: skipped ({exc})")
            continue
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(MAX_COMMAND_BYTES + 1)
        if len(data) > MAX_COMMAND_BYTES:
            notices.append(f"{shown}: skipped (larger than {MAX_COMMAND_BYTES} bytes)")
            continue
        try:
            found[name] = parse_command(
                name, data.decode("utf-8", errors="replace"), source=source, path=shown
            )
        except ConfigError as exc:
            notices.append(f"{exc}; skipped")
    return found


class Commands(BaseModel):
    """The commands a run may use, by name, and why any file was skipped."""

    model_config = ConfigDict(frozen=True)

    commands: dict[str, CustomCommand] = Field(default_factory=dict)
    notices: tuple[str, ...] = ()

    def get(self, name: str) -> CustomCommand:
        command = self.commands.get(name.removeprefix("/"))
        if command is None:
            known = ", ".join(sorted(self.commands)) or "none"
            raise ConfigError(f"no custom command {name!r} (known: {known})", name=name)
        return command


def load_commands(workspace: Path | None, *, user_dir: Path | None, trusted: bool) -> Commands:
    """The user's commands and, when ``trusted``, the workspace's (they win by name)."""
    notices: list[str] = []
    commands: dict[str, CustomCommand] = {}
    if user_dir is not None:
        commands.update(_read_dir(user_dir, USER_DIR, "user", notices))
    if workspace is not None and trusted:
        commands.update(_read_dir(workspace, WORKSPACE_DIR, "workspace", notices))
    return Commands(commands=commands, notices=tuple(notices))
