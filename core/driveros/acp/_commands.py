"""Custom commands as ACP slash commands: ``available_commands_update`` after a session
opens (with the session's own ``/checkpoints`` and ``/revert``; those alone once a prompt left
checkpoints), and a prompt ``/name args`` whose text becomes the command's task
(docs/acp.md)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from acp import schema

from driveros._paths import user_config_dir
from driveros.acp._checkpoints import session_commands
from driveros.config import Environment
from driveros.conventions import Commands, load_commands

log = logging.getLogger(__name__)


async def custom_commands(cwd: Path, loader: Callable[[Path], Environment]) -> Commands:
    """The user's commands and, when the workspace is trusted, its own."""
    env = await asyncio.to_thread(loader, cwd)
    return await asyncio.to_thread(
        load_commands,
        cwd,
        user_dir=user_config_dir(env.process_env or None),
        trusted=env.workspace_trusted,
    )


def commands_update(commands: Commands | None) -> schema.AvailableCommandsUpdate:
    """The session update listing ``commands`` (name, description, argument hint), then the
    session's own ``/checkpoints`` and ``/revert`` (which win over a custom command's name)."""
    own = session_commands()
    taken = {c.name for c in own}
    listed = [
        schema.AvailableCommand(
            name=c.name,
            description=c.meta.description or f"custom command ({c.source})",
            input=schema.AvailableCommandInput(root=schema.UnstructuredCommandInput(hint=hint))
            if (hint := c.meta.argument_hint)
            else None,
        )
        for c in sorted(commands.commands.values() if commands else (), key=lambda c: c.name)
        if c.name not in taken
    ]
    return schema.AvailableCommandsUpdate(
        session_update="available_commands_update", available_commands=[*listed, *own]
    )


def expand_slash(text: str, commands: Commands) -> str | None:
    """The task of a prompt ``/name args…`` naming a known command; None for any other
    text (an unknown ``/word`` is an ordinary prompt)."""
    stripped = text.lstrip()
    if not stripped.startswith("/"):
        return None
    head, _, rest = stripped[1:].partition(" ")
    command = commands.commands.get(head.strip())
    if command is None:
        return None
    return command.task(rest.strip())


async def tell_commands(
    cwd: Path,
    loader: Callable[[Path], Environment],
    send: Callable[[schema.AvailableCommandsUpdate], Awaitable[None]],
    *,
    always: bool = True,
) -> None:
    """Send the ``available_commands_update`` (custom commands, then the session's own);
    with ``always`` False only when there are custom commands. Never raises."""
    found: Commands | None = None
    try:
        found = await custom_commands(cwd, loader)
    except Exception as exc:  # the session's own commands can still be told
        log.info("custom commands not read: %s", exc)
    if not always and not (found and found.commands):
        return
    try:
        await send(commands_update(found))
    except Exception as exc:  # a failed announcement leaves the session usable
        log.info("available_commands_update not sent: %s", exc)


class Announcer:
    """Sends each new session its ``available_commands_update`` in the background (after the
    ``session/new`` answer) when it has custom commands, keeping the tasks until they end."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def announce(
        self,
        cwd: Path,
        loader: Callable[[Path], Environment],
        send: Callable[[schema.AvailableCommandsUpdate], Awaitable[None]],
    ) -> None:
        task = asyncio.get_running_loop().create_task(
            tell_commands(cwd, loader, send, always=False)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


async def expand_prompt(text: str, cwd: Path, loader: Callable[[Path], Environment]) -> str:
    """``text``, or the task of the custom command it invokes (``/name args``)."""
    if not text.lstrip().startswith("/"):
        return text
    expanded = expand_slash(text, await custom_commands(cwd, loader))
    return text if expanded is None else expanded
