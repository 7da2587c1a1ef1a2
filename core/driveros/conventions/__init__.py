"""The user's and the repository's written conventions: instruction files (AGENTS.md and its
fallbacks) and custom commands (``NAME.md`` prompt templates). See docs/extending.md.

    found = load_instructions(workspace, user_dir=user_config_dir(), task=task)
    system_prompt += "\\n\\n" + found.prompt()
    commands = load_commands(workspace, user_dir=user_config_dir(), trusted=False)
    task = commands.get("review").task(["src/app.py"])
"""

from collections.abc import Mapping
from pathlib import Path

from driveros._paths import user_config_dir
from driveros.conventions._commands import (
    CommandMeta,
    Commands,
    CustomCommand,
    load_commands,
    parse_command,
)
from driveros.conventions._instructions import (
    INSTRUCTIONS_CAP,
    InstructionFile,
    Instructions,
    checks_section,
    load_instructions,
    named_dirs,
)


def user_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The user's driveros config directory, where their AGENTS.md, ``commands/`` and
    ``hooks.toml`` live (``$XDG_CONFIG_HOME/driveros``, ``~/.config/driveros``)."""
    return user_config_dir(environ)


__all__ = [
    "INSTRUCTIONS_CAP",
    "CommandMeta",
    "Commands",
    "CustomCommand",
    "InstructionFile",
    "Instructions",
    "checks_section",
    "load_commands",
    "load_instructions",
    "named_dirs",
    "parse_command",
    "user_dir",
]
