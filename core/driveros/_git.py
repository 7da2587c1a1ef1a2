"""The one way driveros runs ``git``: async (:func:`run_git`) or, for code that already runs in a
worker thread, sync (:func:`run_git_sync`); both build the same command line and environment.

A repository is input: nothing it or an environment variable set for it configures may run
code on driveros' behalf. So every call

- starts with ``--literal-pathspecs`` (paths we pass are file names, never patterns);
- gets ``-c core.fsmonitor=false -c core.hooksPath=/dev/null`` (command-line scope beats every
  config file) unless ``hooks="user"`` asks for the user's own hooks: only ``commit`` of a
  review whose changes touch no hook path (``driveros.review``) and reading where the hooks are;
- with ``scratch=True`` (driveros' own scratch repositories, not the user's) also pins the
  options that would change bytes or start background work (:data:`SCRATCH_CONFIG`);
- runs in :func:`git_environment`, the caller's environment without the variables that point
  git at other configuration, programs or repositories, or preload libraries (a call with
  ``hooks="user"`` is the user's own commit and keeps the user's environment for their hooks);
- never inherits our stdin or stdout; a cancelled or timed-out git is killed and reaped.

Failures are :class:`driveros.GitError` (``check=True``: a non-zero exit; always: git cannot be
started) and :class:`driveros.GitNotFoundError` when git is not on PATH.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal, NamedTuple

from driveros._errors import GitError, GitNotFoundError

#: Put before every subcommand on a user's repository: no filesystem monitor and no hook runs
#: on driveros' behalf.
NEUTRAL_CONFIG: tuple[str, ...] = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")

#: Added for driveros' own scratch repositories: no user config that would change bytes or
#: start daemons or hooks (the scratch copy never needs either).
SCRATCH_CONFIG: tuple[str, ...] = (
    *NEUTRAL_CONFIG,
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.safecrlf=false",
    "-c",
    "core.quotePath=false",
    "-c",
    "gc.auto=0",
)

#: Whose hooks a call may run: ``"none"`` (the default) or the user's own (``"user"``).
Hooks = Literal["none", "user"]

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


class GitResult(NamedTuple):
    """What a finished git printed: raw bytes (``text``/``error`` decode them as UTF-8)."""

    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    @property
    def error(self) -> str:
        return self.stderr.decode("utf-8", "replace")


def git_executable() -> str:
    """The path of ``git``; :class:`GitNotFoundError` when it is not on PATH."""
    exe = shutil.which("git")
    if exe is None:
        raise GitNotFoundError("git is not installed or not on PATH")
    return exe


def _argv(
    args: Sequence[str],
    cwd: Path,
    *,
    scratch: bool,
    hooks: Hooks,
    git_dir: Path | None,
    work_tree: Path | None,
    literal: bool = True,
) -> list[str]:
    argv = [git_executable(), "--literal-pathspecs", "-C", str(cwd)]
    if not literal:
        del argv[1]
    if scratch:
        argv.extend(SCRATCH_CONFIG)
    elif hooks == "user":
        argv.extend(NEUTRAL_CONFIG[:2])
    else:
        argv.extend(NEUTRAL_CONFIG)
    if git_dir is not None:
        argv.append(f"--git-dir={git_dir}")
    if work_tree is not None:
        argv.append(f"--work-tree={work_tree}")
    argv.extend(args)
    return argv


def _checked(args: Sequence[str], cwd: Path, result: GitResult, check: bool) -> GitResult:
    if check and result.returncode != 0:
        text = result.error.strip()
        raise GitError(
            f"git {' '.join(args[:2])} failed: {text or f'exit {result.returncode}'}",
            args=list(args),
            returncode=result.returncode,
            stderr=text,
            cwd=str(cwd),
        )
    return result


async def run_git(
    args: Sequence[str],
    *,
    cwd: Path,
    check: bool = True,
    stdin: bytes | None = None,
    timeout: float | None = None,
    scratch: bool = False,
    hooks: Hooks = "none",
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    literal: bool = True,
) -> GitResult:
    """Run ``git -C cwd args`` (see the module docstring for what every call gets).

    ``literal=False`` drops ``--literal-pathspecs``, only for commands that take paths but
    refuse pathspec magic (``check-ignore``); never for commands given pathspecs.

    With ``check`` a non-zero exit raises :class:`GitError`. ``TimeoutError`` after
    ``timeout`` seconds; on a timeout or cancellation git is killed and reaped first, so no git
    process outlives its caller.
    """
    argv = _argv(
        args,
        cwd,
        scratch=scratch,
        hooks=hooks,
        git_dir=git_dir,
        work_tree=work_tree,
        literal=literal,
    )
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=None if hooks == "user" else git_environment(),
        )
    except OSError as exc:
        raise GitError(f"cannot run git: {exc}", args=list(args), cwd=str(cwd)) from exc
    try:
        async with asyncio.timeout(timeout):
            out, err = await proc.communicate(stdin)
    except BaseException:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await asyncio.shield(proc.wait())
        raise
    code = proc.returncode if proc.returncode is not None else -1
    return _checked(args, cwd, GitResult(code, out, err), check)


def run_git_sync(
    args: Sequence[str],
    *,
    cwd: Path,
    check: bool = True,
    timeout: float | None = None,
    scratch: bool = False,
    hooks: Hooks = "none",
) -> GitResult:
    """:func:`run_git` for code that already runs in a worker thread (never on the loop)."""
    argv = _argv(args, cwd, scratch=scratch, hooks=hooks, git_dir=None, work_tree=None)
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=None if hooks == "user" else git_environment(),
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise TimeoutError(f"git {' '.join(args[:2])} timed out after {timeout} s") from exc
    except OSError as exc:
        raise GitError(f"cannot run git: {exc}", args=list(args), cwd=str(cwd)) from exc
    return _checked(args, cwd, GitResult(done.returncode, done.stdout, done.stderr), check)


def split_z(data: bytes) -> list[str]:
    """Split NUL-separated git output into paths (decoded with surrogateescape)."""
    return [p.decode("utf-8", "surrogateescape") for p in data.split(b"\0") if p]
