"""The one way driveros runs ``git``: async (:func:`run_git`) or, for code that already runs in a
worker thread, sync (:func:`run_git_sync`); both build the same command line and environment.

A repository is input: nothing it or an environment variable set for it configures may run
code on driveros' behalf. So every call

- starts with ``--literal-pathspecs`` (paths we pass are file names, never patterns);
- gets ``-c core.fsmonitor=false -c core.hooksPath=/dev/null`` (command-line scope beats every
  config file) unless ``hooks="user"`` asks for the user's own hooks: only ``commit`` of a
  review whose changes touch no hook path (``driveros.review``) and reading where the hooks are;
- on a user's repository, first reads the effective configuration (``git config --list``,
  which runs nothing; when that fails, the call is not run and fails the same way) and pins
  every program-running key (:func:`is_program_key`) that the repository's own config
  (``local``/``worktree`` scope, included files too) sets: back to the user's or the system's
  value when they set one, else to a value that runs nothing (:func:`program_pins`): a
  ``filter.<x>.clean`` named by ``.gitattributes``, a ``diff.<x>.textconv``,
  ``diff.external`` or ``gpg.program`` planted in ``.git/config`` never runs for ``git add``,
  ``checkout-index``, ``diff`` or ``commit``;
- in a ``GitRepo(scratch=True)`` (driveros' own scratch repositories, not the user's) also
  pins the options that would change bytes or start background work (:data:`SCRATCH_CONFIG`);
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

from driveros._errors import GitError, GitNotFoundError
from driveros._git_pins import (
    REPOSITORY_SCOPES,
    is_program_key,
    parse_config_list,
    program_pins,
)

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
    # A checkpoint or a review rewrites the private index after a few changed files: split,
    # only those are written, not every entry of a large workspace.
    "-c",
    "core.splitIndex=true",
)


def pinned_environment(env: Mapping[str, str], pins: Sequence[tuple[str, str]]) -> dict[str, str]:
    """``env`` with ``pins`` appended as ``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` (command
    scope: beats every file; keys and values never need quoting). Pins already there stay."""
    out = dict(env)
    if not pins:
        return out
    try:
        start = int(out.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        start = 0
    if start < 0:
        start = 0
    for n, (key, value) in enumerate(pins, start):
        out[f"GIT_CONFIG_KEY_{n}"] = key
        out[f"GIT_CONFIG_VALUE_{n}"] = value
    out["GIT_CONFIG_COUNT"] = str(start + len(pins))
    return out


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


@dataclass(frozen=True, slots=True, kw_only=True)
class GitRepo:
    """Which repository a :func:`run_git` call works on, beyond its ``cwd``, and whose it is.

    ``git_dir``/``work_tree`` are passed as ``--git-dir``/``--work-tree``; ``index_file`` points
    git at another index (``GIT_INDEX_FILE``: a baseline tree edited without touching the
    working index). ``scratch``: driveros' own repository, not the user's: its configuration
    is ours (never read first) and :data:`SCRATCH_CONFIG` is pinned. ``config``: on a user's
    repository, the successful ``git config --list`` (:func:`read_config`) the operation has
    just read in it (same ``git_dir``/``work_tree``, ``cwd`` anywhere in it: git's effective
    configuration does not depend on which), whose pins are used instead of reading again.
    """

    git_dir: Path | None = None
    work_tree: Path | None = None
    index_file: Path | None = None
    scratch: bool = False
    config: GitResult | None = None

    def __post_init__(self) -> None:
        if self.scratch and self.config is not None:
            raise ValueError("a scratch repository's configuration is never read")


#: A user's repository at ``cwd``, git finding it as it would (the default of every call).
USER_REPO = GitRepo()


def _argv(
    args: Sequence[str],
    cwd: Path,
    *,
    repo: GitRepo,
    hooks: Hooks,
    literal: bool = True,
) -> list[str]:
    argv = [git_executable(), "--literal-pathspecs", "-C", str(cwd)]
    if not literal:
        del argv[1]
    if repo.scratch:
        argv.extend(SCRATCH_CONFIG)
    elif hooks == "user":
        argv.extend(NEUTRAL_CONFIG[:2])
    else:
        argv.extend(NEUTRAL_CONFIG)
    if repo.git_dir is not None:
        argv.append(f"--git-dir={repo.git_dir}")
    if repo.work_tree is not None:
        argv.append(f"--work-tree={repo.work_tree}")
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


#: How the effective configuration is read: reading runs nothing (includes are files).
_LIST = ("config", "--list", "-z", "--show-scope", "--show-origin")
#: Subcommands whose repository configuration is not read first: the read itself, and those
#: that make a repository (its configuration is the one they write).
_NO_LIST = frozenset({"config", "init", "clone", "version", "--version"})


def _reads_repository_config(args: Sequence[str], repo: GitRepo) -> bool:
    """Whether a call first reads the configuration to pin its program keys: every call on a
    user's repository (``scratch`` repositories are driveros' own, their config is ours)."""
    return not repo.scratch and bool(args) and args[0] not in _NO_LIST


def _listing_argv(cwd: Path, repo: GitRepo, hooks: Hooks) -> list[str]:
    """The ``git config --list`` a call on ``repo`` reads first (same repository, same hooks)."""
    where = GitRepo(git_dir=repo.git_dir, work_tree=repo.work_tree)
    return _argv(_LIST, cwd, repo=where, hooks=hooks)


def _base_env(repo: GitRepo, hooks: Hooks) -> dict[str, str]:
    env = dict(os.environ) if hooks == "user" else git_environment()
    if repo.index_file is not None:
        env["GIT_INDEX_FILE"] = str(repo.index_file)
    return env


def _with_pins(env: dict[str, str], listed: GitResult) -> dict[str, str]:
    """``env`` plus :func:`program_pins` for what ``git config --list`` printed. (Outside a
    repository the listing succeeds, without repository scopes; when it fails, a config git
    cannot parse or a git too old for ``--show-scope``, the call is not run: its result is
    the listing's failure.)"""
    return pinned_environment(env, program_pins(parse_config_list(listed.stdout)))


#: The niceness git processes started in this context get (see :func:`yielding_cpu`).
_NICENESS: ContextVar[int] = ContextVar("driveros_git_niceness", default=0)


@contextlib.contextmanager
def yielding_cpu(niceness: int = 10) -> Iterator[None]:
    """Inside: every git process started (in this context, and tasks made from it) runs at
    ``niceness``, so work in the background leaves the CPU to what a user waits for."""
    token = _NICENESS.set(niceness)
    try:
        yield
    finally:
        _NICENESS.reset(token)


async def _spawn(
    argv: Sequence[str],
    env: Mapping[str, str],
    stdin: bytes | None,
    timeout: float | None,
    *,
    args: Sequence[str],
    cwd: Path,
) -> GitResult:
    """Run ``argv`` (for the caller's ``args`` in ``cwd``); kill and reap it on a timeout or
    cancellation."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
    except OSError as exc:
        raise GitError(f"cannot run git: {exc}", args=list(args), cwd=str(cwd)) from exc
    niceness = _NICENESS.get()
    if niceness:
        with contextlib.suppress(OSError):  # gone already, or not ours to lower: no matter
            os.setpriority(os.PRIO_PROCESS, proc.pid, niceness)
    try:
        async with asyncio.timeout(timeout):
            out, err = await proc.communicate(stdin)
    except BaseException:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await asyncio.shield(proc.wait())
        raise
    return GitResult(proc.returncode if proc.returncode is not None else -1, out, err)


async def run_git(
    args: Sequence[str],
    *,
    cwd: Path,
    repo: GitRepo = USER_REPO,
    check: bool = True,
    stdin: bytes | None = None,
    timeout: float | None = None,
    hooks: Hooks = "none",
    literal: bool = True,
) -> GitResult:
    """Run ``git -C cwd args`` in ``repo`` (see the module docstring for what every call gets).

    ``literal=False`` drops ``--literal-pathspecs``, only for commands that take paths but
    refuse pathspec magic (``check-ignore``); never for commands given pathspecs.

    With ``check`` a non-zero exit raises :class:`GitError`. ``TimeoutError`` after
    ``timeout`` seconds; on a timeout or cancellation git is killed and reaped first, so no git
    process outlives its caller.
    """
    argv = _argv(args, cwd, repo=repo, hooks=hooks, literal=literal)
    env = _base_env(repo, hooks)
    if _reads_repository_config(args, repo):
        listed = repo.config
        if listed is None:
            listing = _listing_argv(cwd, repo, hooks)
            listed = await _spawn(listing, env, None, timeout, args=args, cwd=cwd)
        if listed.returncode != 0:  # fail closed: the call is not run unpinned
            return _checked(args, cwd, listed, check)
        env = _with_pins(env, listed)
    result = await _spawn(argv, env, stdin, timeout, args=args, cwd=cwd)
    return _checked(args, cwd, result, check)


def run_git_sync(
    args: Sequence[str],
    *,
    cwd: Path,
    repo: GitRepo = USER_REPO,
    check: bool = True,
    timeout: float | None = None,
    hooks: Hooks = "none",
) -> GitResult:
    """:func:`run_git` for code that already runs in a worker thread (never on the loop)."""
    argv = _argv(args, cwd, repo=repo, hooks=hooks)
    env = _base_env(repo, hooks)
    try:
        if _reads_repository_config(args, repo):
            listed = repo.config
            if listed is None:
                done = subprocess.run(
                    _listing_argv(cwd, repo, hooks),
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    env=env,
                    timeout=timeout,
                )
                listed = GitResult(done.returncode, done.stdout, done.stderr)
            if listed.returncode != 0:  # fail closed: the call is not run unpinned
                return _checked(args, cwd, listed, check)
            env = _with_pins(env, listed)
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=env,
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


#: Submodules (nested any deep) whose configuration :func:`planted_programs` reads at most.
MAX_SUBMODULES = 64
_GITLINK = b"160000 "


async def read_config(
    cwd: Path,
    *,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    timeout: float | None = None,
) -> GitResult:
    """The effective configuration at ``cwd`` as :func:`run_git`'s ``config`` takes it, for
    several calls in one repository to share one read (check its ``returncode``)."""
    where = GitRepo(git_dir=git_dir, work_tree=work_tree)
    return await run_git(_LIST, cwd=cwd, repo=where, check=False, timeout=timeout)


async def planted_programs(
    cwd: Path,
    *,
    timeout: float | None = 30.0,
    counts: Callable[[str], bool] = is_program_key,
) -> list[str]:
    """What the repository at ``cwd`` itself configures git to run, as ``key (where)``: every
    key its own configuration (``local``/``worktree`` scope, included files too) sets that
    ``counts`` (default :func:`is_program_key`), and the same for every populated submodule
    (``git status``/``diff`` run git inside them, with their own configuration). Empty
    outside a repository.

    Reading configuration runs nothing. Raises :class:`GitError` when the configuration
    cannot be read (a file git cannot parse) or there are more than :data:`MAX_SUBMODULES`.
    """
    found: list[str] = []
    queue: list[tuple[Path, str]] = [(cwd, "")]
    seen = 0
    while queue:
        here, label = queue.pop(0)
        seen += 1
        if seen > MAX_SUBMODULES + 1:
            raise GitError(f"more than {MAX_SUBMODULES} submodules to check", cwd=str(cwd))
        listed = await read_config(here, timeout=timeout)
        if listed.returncode != 0:  # outside a repository too, the listing succeeds
            what = f"the configuration of {label}" if label else "the git configuration"
            raise GitError(f"cannot read {what}: {listed.error.strip()}", cwd=str(here))
        known = GitRepo(config=listed)
        top = await run_git(["rev-parse", "--show-toplevel"], cwd=here, repo=known, check=False)
        if top.returncode != 0:
            continue  # not a repository: no repository configuration
        for entry in parse_config_list(listed.stdout):
            if entry.scope in REPOSITORY_SCOPES and counts(entry.key):
                where = f"submodule {label}" if label else entry.origin.removeprefix("file:")
                found.append(f"{entry.key} ({where})")
        if found:
            break  # one is enough to refuse
        root = Path(top.text.strip())
        staged = await run_git(
            ["ls-files", "-z", "--stage", "--full-name", ":/"],
            cwd=here,
            repo=known,
            check=False,
            timeout=timeout,
            literal=False,
        )
        links = [
            line.split(b"\t", 1)[1].decode("utf-8", "surrogateescape")
            for line in staged.stdout.split(b"\0")
            if line.startswith(_GITLINK) and b"\t" in line
        ]
        populated = await asyncio.to_thread(_populated, root, links)
        queue.extend((root / path, f"{label}/{path}" if label else path) for path in populated)
    return found


def _populated(root: Path, paths: Sequence[str]) -> list[str]:
    """The submodule ``paths`` that have a ``.git`` of their own (git enters only those)."""
    return [path for path in paths if (root / path / ".git").exists()]


#: How long :func:`repository_pins` waits for the configuration (a FIFO ``.git/config``
#: blocks git's read for ever).
PINS_TIMEOUT = 30.0


async def repository_pins(
    cwd: Path, *, git_dir: Path | None = None, work_tree: Path | None = None
) -> list[tuple[str, str]]:
    """:func:`program_pins` for commands that do not see the user's global configuration
    (a sandbox: private ``HOME``): the repository's own program keys pinned back to the
    system's value or to nothing, never to the user's. Empty when the configuration cannot
    be read within :data:`PINS_TIMEOUT` (git would refuse to run, or block reading it, in
    that repository too)."""
    try:
        listed = await read_config(cwd, git_dir=git_dir, work_tree=work_tree, timeout=PINS_TIMEOUT)
    except TimeoutError:
        return []
    if listed.returncode != 0:
        return []
    return program_pins([e for e in parse_config_list(listed.stdout) if e.scope != "global"])
