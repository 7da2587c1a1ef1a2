"""``driveros agent --command NAME [ARGS…]``: a custom command's body is the run's task.

The command comes from the user's ``~/.config/driveros/commands/`` or, in a trusted workspace,
its ``.driveros/commands/`` (docs/extending.md). Its front matter's ``approve`` and ``review``
apply where the command line leaves them at their defaults.
"""

from __future__ import annotations

import argparse
import sys

from driveros._errors import ConfigError
from driveros._paths import user_config_dir
from driveros._unicode import printable
from driveros.config import Environment
from driveros.conventions import load_commands


def command_task(args: argparse.Namespace, env: Environment) -> str:
    """The task of ``--command NAME ARGS…``; :class:`ConfigError` for an unknown name. Sets
    ``args.approve`` and ``args.review`` from the front matter where they are defaults."""
    name, *arguments = args.custom_command
    found = load_commands(
        args.workspace.expanduser(),
        user_dir=user_config_dir(env.process_env or None),
        trusted=env.workspace_trusted,
    )
    for notice in found.notices:
        sys.stderr.write(f"driveros: warning: {printable(notice)}\n")
    command = found.get(name)
    if command.meta.approve is not None and args.approve == "policy":
        args.approve = command.meta.approve
    if command.meta.review and not args.review:
        args.review = True
        if args.review_action is None or args.review_action == "prompt":
            args.review_action = "prompt"
    task = command.task(arguments)
    if not task:
        raise ConfigError(f"custom command {name!r} ({command.path}) has an empty body")
    return printable(task)
