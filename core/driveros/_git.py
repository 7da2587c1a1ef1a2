"""One way to run ``git`` from async code: no stdin, captured output, killed when abandoned.

These are driveros' own read-only git calls on the host (the repository root, the dogfood
commit message's diff, the memory scope). A repository is input: nothing it or an environment
variable set for it configures may run code here. So every call gets
``-c core.fsmonitor=false -c core.hooksPath=/dev/null`` (command-line scope beats every config
file) and :func:`git_environment`, the caller's environment without the variables that point
git at other configuration, programs or repositories, or preload libraries.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path

#: Put before every subcommand: no filesystem monitor and no hook runs on driveros' behalf.
NEUTRAL_CONFIG: tuple[str, ...] = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")

#: ``GIT_*`` variables kept: the identity of commits and which repository and index to use (git
#: sets these for the hooks it runs: ``commit -a`` hands a hook a temporary index), nothing
#: that loads configuration or runs a program.
_KEPT_GIT_VARS = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_COMMON_DIR",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_PREFIX",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE",
        "GIT_CEILING_DIRECTORIES",
    }
)
#: Other variables that would make git (or the dynamic loader) run something else.
_DROPPED = frozenset(
    {"BASH_ENV", "ENV", "PAGER", "EDITOR", "VISUAL", "SSH_ASKPASS", "PREFIX", "XDG_CONFIG_HOME"}
)


def git_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default ``os.environ``) made safe for driveros' own git calls.

    Drops every ``GIT_*`` variable but the commit identity and the repository/index selection
    (so ``GIT_CONFIG_GLOBAL``, ``GIT_CONFIG_COUNT``, ``GIT_EXEC_PATH``, ``GIT_SSH_COMMAND``, ...),
    the loader's ``LD_*``/``DYLD_*``, ``BASH_ENV`` and pagers/editors; adds
    ``GIT_TERMINAL_PROMPT=0`` and ``GIT_OPTIONAL_LOCKS=0``.
    """
    source = os.environ if environ is None else environ
    env = {
        k: v
        for k, v in source.items()
        if not (k.startswith("GIT_") and k not in _KEPT_GIT_VARS)
        and not k.startswith(("LD_", "DYLD_"))
        and k not in _DROPPED
    }
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


async def run_git(cwd: Path, *args: str, timeout: float | None = None) -> tuple[int, str, str]:
    """Run ``git -C cwd args``; returns ``(exit code, stdout, stderr)`` decoded as UTF-8.

    Never inherits our stdin or stdout. Raises ``OSError`` when git cannot be started and
    ``TimeoutError`` after ``timeout`` seconds; on a timeout or cancellation git is killed
    and reaped before the exception propagates.
    """
    proc = await asyncio.create_subprocess_exec(
        "git",
        *NEUTRAL_CONFIG,
        "-C",
        str(cwd),
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=git_environment(),
    )
    try:
        async with asyncio.timeout(timeout):
            out, err = await proc.communicate()
    except (asyncio.CancelledError, TimeoutError):
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    assert proc.returncode is not None
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
