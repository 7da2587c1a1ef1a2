"""The environment commands see: an allowlist, never the caller's environment as it is.

The sandbox never reads ``os.environ`` itself. A caller hands an environment in
(``LocalSandbox(ws, base_env=os.environ)``); only the variables named in :data:`PASS_NAMES`
(and ``LC_*``) are taken from it, and of those, none whose value a ``.env*`` file of the
workspace also sets, and no path that is relative or (for toolchain locations) inside the
workspace. ``HOME`` and ``TMPDIR`` are private directories of the sandbox. So ``LD_PRELOAD``,
``GIT_CONFIG_GLOBAL``, ``XDG_CONFIG_HOME``, ``BASH_ENV``, ``PYTHONSTARTUP``, provider keys and
anything else a repository's ``.env`` or the user's shell holds never reach a command.
See docs/sandbox.md, "Environment".
"""

from __future__ import annotations

import contextlib
import io
import os
import stat as st
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from driveros._git_pins import NEUTRAL_VALUES
from driveros.config import KEY_VARS, is_secret_name
from driveros.sandbox._protocol import PolicyError

#: Used when the caller gives no base environment (or no usable PATH).
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

#: Name fragments treated as secrets on top of driveros.config's hints.
_EXTRA_SECRET_HINTS = ("PASS", "AUTH", "COOKIE", "SESSION", "PRIVATE", "CREDS", "DSN")
#: Exact names that carry credentials without saying so.
_SECRET_NAMES = frozenset(
    {"DATABASE_URL", "REDIS_URL", "MONGODB_URI", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "NETRC"}
)

#: Locale, time zone and who: taken from the caller when set.
LOCALE_NAMES = frozenset({"LANG", "LANGUAGE", "TZ", "USER", "LOGNAME"})
#: Where toolchains are installed: taken when an absolute path outside the workspace.
#: (rustup's ``cargo`` shim needs RUSTUP_HOME/CARGO_HOME once HOME is private; Go finds its
#: module cache through GOPATH/GOMODCACHE; Java tools through JAVA_HOME; and so on.)
TOOLCHAIN_PATHS = frozenset(
    {
        "JAVA_HOME",
        "GOROOT",
        "GOPATH",
        "GOMODCACHE",
        "GOCACHE",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "PYENV_ROOT",
        "NVM_DIR",
        "GEM_HOME",
        "GEM_PATH",
        "DOTNET_ROOT",
        "ANDROID_HOME",
        "ANDROID_SDK_ROOT",
        "CONDA_EXE",
    }
)
#: Where toolchains live when their variable is unset: under the caller's HOME. The command's
#: HOME is private, so these are set explicitly when the directory exists (rustup's shims,
#: pyenv's shims and nvm find nothing otherwise).
HOME_DEFAULTS = {
    "RUSTUP_HOME": ".rustup",
    "CARGO_HOME": ".cargo",
    "PYENV_ROOT": ".pyenv",
    "NVM_DIR": ".nvm",
    "GOPATH": "go",
}
#: The active Python environment: may be the workspace's own ``.venv``.
VENV_PATHS = frozenset({"VIRTUAL_ENV", "CONDA_PREFIX"})
#: Switches that only change how tools report or behave, never what they load or run.
SWITCH_NAMES = frozenset(
    {
        "CI",
        "RUSTUP_TOOLCHAIN",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
        "PYTHONUTF8",
        "PYTHONIOENCODING",
        "PYTHONHASHSEED",
        "SOURCE_DATE_EPOCH",
        "GOTOOLCHAIN",
        "CARGO_TERM_COLOR",
        "FORCE_COLOR",
    }
)
#: Who commits: the only ``GIT_*`` names taken (the private HOME has no ``~/.gitconfig``).
IDENTITY_NAMES = frozenset(
    {"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"}
)
#: Every name taken from the caller's environment (plus ``LC_*`` and PATH).
PASS_NAMES = LOCALE_NAMES | TOOLCHAIN_PATHS | VENV_PATHS | SWITCH_NAMES | IDENTITY_NAMES | {"PATH"}

#: Forced for every command: nothing may wait on a terminal or a pager.
NON_INTERACTIVE = {
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "NO_COLOR": "1",
    "DEBIAN_FRONTEND": "noninteractive",
}

#: Forced for every command: Python writes no bytecode caches. An edit that keeps a file's size
#: within the same second as an earlier import would otherwise leave a ``.pyc`` that Python
#: still trusts (it checks whole-second mtime and size), and the agent's next test run would
#: exercise the old code. It also keeps ``__pycache__`` out of the copy the agent works on.
FRESH_CODE = {"PYTHONDONTWRITEBYTECODE": "1"}

#: Program-running git configuration keys with a fixed name, and the value that runs nothing
#: (or git's default program). Command-line scope (``GIT_CONFIG_COUNT``) beats every config
#: file, so a repository's ``.git/config`` cannot make the ``git log``/``show`` a command runs
#: start a filesystem monitor, a signature verifier of its choosing, a pager, an editor, an
#: askpass or credential helper, an ssh command or an ``ext::`` transport; populated
#: submodules (their own config) are not entered for their dirty state. Only keys whose pinned
#: value leaves git working as usual are here: ``diff.external`` has no such value (an empty
#: one is a program named ""), nor do keys named after a driver (``filter.<x>.clean``,
#: ``diff.<x>.textconv``): the local sandbox pins those a repository sets when it starts
#: (``driveros._git.repository_pins``) and the approval policy asks before git runs in such a
#: repository (docs/security.md, "Allowlisted commands that read outside the workspace or run
#: planted code").
GIT_PINS: tuple[tuple[str, str], ...] = (
    *NEUTRAL_VALUES.items(),
    ("diff.ignoreSubmodules", "dirty"),
    ("protocol.ext.allow", "never"),
)

#: Forced for every command: :data:`GIT_PINS` as ``GIT_CONFIG_COUNT``/``KEY_n``/``VALUE_n``,
#: and ``GIT_OPTIONAL_LOCKS=0``: ``git status`` does not write the index as a side effect, so
#: a ``post-index-change`` hook a repository arrived with (from an archive) never runs for it.
GIT_NEUTRAL = {
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_CONFIG_COUNT": str(len(GIT_PINS)),
    **{f"GIT_CONFIG_KEY_{n}": key for n, (key, _) in enumerate(GIT_PINS)},
    **{f"GIT_CONFIG_VALUE_{n}": value for n, (_, value) in enumerate(GIT_PINS)},
}

#: Largest ``.env*`` file read to learn which values came from one.
MAX_DOTENV_BYTES = 1024 * 1024


def is_secret(name: str) -> bool:
    """Whether a variable is withheld from commands by default."""
    upper = name.upper()
    if upper in _SECRET_NAMES or name in {v for v in KEY_VARS.values() if v}:
        return True
    return is_secret_name(name) or any(hint in upper for hint in _EXTRA_SECRET_HINTS)


def scrub(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without secrets (provider keys, tokens, passwords, agent sockets...)."""
    return {k: v for k, v in env.items() if not is_secret(k)}


def _inside(path: str, root: Path | None) -> bool:
    if root is None:
        return False
    real = Path(os.path.realpath(path))
    return real == root or root in real.parents


def _clean_path(value: str, root: Path | None) -> str:
    """PATH without empty or relative entries (they mean "the command's cwd")."""
    del root  # absolute entries inside the workspace stay: the user's activated .venv/bin
    entries = [e for e in value.split(os.pathsep) if e.startswith("/")]
    return os.pathsep.join(dict.fromkeys(entries)) or DEFAULT_PATH


def allowed_environment(
    base_env: Mapping[str, str],
    *,
    workspace: Path | None = None,
    dotenv: Iterable[tuple[str, str]] = (),
) -> dict[str, str]:
    """The variables of ``base_env`` a command may see (see the module docstring).

    ``dotenv`` lists ``(name, value)`` pairs read from the workspace's ``.env*`` files: a
    variable a file assigns that same value is dropped, whoever put it in ``base_env``.
    """
    from_files = set(dotenv)
    env: dict[str, str] = {}
    for name, value in base_env.items():
        if not (name in PASS_NAMES or name.startswith("LC_")):
            continue
        if is_secret(name) and name not in IDENTITY_NAMES:  # GIT_AUTHOR_* says "AUTH"
            continue
        if "\x00" in value or (name, value) in from_files:
            continue
        if name == "PATH":
            env[name] = _clean_path(value, workspace)
        elif name in TOOLCHAIN_PATHS or name in VENV_PATHS:
            paths = value.split(os.pathsep)
            if not all(p.startswith("/") for p in paths):
                continue
            if name in TOOLCHAIN_PATHS and any(_inside(p, workspace) for p in paths):
                continue
            env[name] = value
        else:
            env[name] = value
    home = base_env.get("HOME", "")
    if home.startswith("/") and ("HOME", home) not in from_files and not _inside(home, workspace):
        for name, sub in HOME_DEFAULTS.items():
            path = Path(home, sub)
            if name not in env and path.is_dir() and not _inside(str(path), workspace):
                env[name] = str(path)
    return env


def base_environment(
    base_env: Mapping[str, str] | None,
    *,
    workspace: Path | None = None,
    dotenv: Iterable[tuple[str, str]] = (),
) -> dict[str, str]:
    """The environment every command starts from (the sandbox adds HOME and TMPDIR).

    ``None`` gives a minimal safe one (PATH, LANG, TERM=dumb ...); a mapping is filtered by
    :func:`allowed_environment`. The non-interactive, fresh-code and git settings always win.
    """
    if base_env is None:
        env = {"PATH": DEFAULT_PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    else:
        env = allowed_environment(base_env, workspace=workspace, dotenv=dotenv)
        env.setdefault("PATH", DEFAULT_PATH)
        env.setdefault("LANG", "C.UTF-8")
    env.update(NON_INTERACTIVE)
    env.update(FRESH_CODE)
    env.update(GIT_NEUTRAL)
    return env


#: Directories never searched for ``.env`` files (dependencies and the git directory).
_DOTENV_SKIP_DIRS = frozenset({".git", "node_modules"})
#: At most this many directories are visited when looking for ``.env`` files below the root.
MAX_DOTENV_DIRS = 20_000


_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _is_dotenv_name(name: str) -> bool:
    folded = name.casefold()
    return folded.startswith(".env") or folded.endswith(".env")


def _read_dotenv(dir_fd: int, name: str) -> list[tuple[str, str]]:
    from dotenv import dotenv_values  # lazy: keeps `import driveros` cheap

    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as handle:
        if not st.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return []
        data = handle.read(MAX_DOTENV_BYTES)
    values = dotenv_values(stream=io.StringIO(data.decode("utf-8", "replace")), interpolate=False)
    return [(k, v) for k, v in values.items() if v]


def dotenv_assignments(root: Path, *, recursive: bool = False) -> list[tuple[str, str]]:
    """``(name, value)`` of every assignment in the ``.env*``/``*.env`` files at ``root``.

    ``recursive`` also reads those below it (not in ``.git`` or ``node_modules``), listed by
    ``find`` (a walk in C, off the interpreter lock: in Python it was ~0.15 s of CPU at 100k
    files that a run's start competed with), or when ``find`` cannot run by a walk of at most
    :data:`MAX_DOTENV_DIRS` directories. Blocking. Only regular files are read (no FIFO can
    hang this, no symlink is followed), each up to :data:`MAX_DOTENV_BYTES`; nothing is
    interpolated; unreadable files are skipped.
    """
    found = _found_by_find(root) if recursive else None
    if found is not None:
        return _read_found(found)
    pairs: list[tuple[str, str]] = []
    try:
        walker = os.fwalk(root, follow_symlinks=False)
        for visited, (_top, dirs, files, top_fd) in enumerate(walker):
            for name in sorted(files):
                if _is_dotenv_name(name):
                    pairs.extend(_read_dotenv(top_fd, name))
            if not recursive or visited >= MAX_DOTENV_DIRS:
                break
            dirs[:] = [d for d in dirs if d not in _DOTENV_SKIP_DIRS]
    except OSError:
        pass
    return pairs


#: ``find`` at a fixed place (never looked up on a PATH), and how long it may look.
_FIND = ("/usr/bin/find", "/bin/find")
_FIND_TIMEOUT_S = 20.0
_FIND_NICENESS = 5


def _found_by_find(root: Path) -> list[bytes] | None:
    """The ``.env`` files below ``root`` (absolute paths, sorted), listed by ``find``; None
    when it cannot run. What it listed before its time ran out counts (a walk cut short)."""
    find = next((f for f in _FIND if os.access(f, os.X_OK)), None)
    if find is None:
        return None
    skip = [a for d in sorted(_DOTENV_SKIP_DIRS) for a in ("-o", "-name", d)][1:]
    argv = [
        find,
        str(Path(root).resolve()),
        *("(", *skip, ")", "-prune", "-o", "-type", "f"),
        *("(", "-iname", ".env*", "-o", "-iname", "*.env", ")", "-print0"),
    ]
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
        )
    except OSError:
        return None
    with proc:
        # A run's start needs the list by the time its workspace is ready, not before: what
        # that preparation runs comes first.
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, proc.pid, _FIND_NICENESS)
        try:
            out, _ = proc.communicate(timeout=_FIND_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    return sorted(p for p in out.split(b"\0") if p)


def _read_found(paths: list[bytes]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for path in paths:
        parent, name = os.path.split(path)
        if not _is_dotenv_name(os.fsdecode(name)):
            continue
        try:
            dir_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            pairs.extend(_read_dotenv(dir_fd, os.fsdecode(name)))
        finally:
            os.close(dir_fd)
    return pairs


def command_environment(base: Mapping[str, str], extra: Mapping[str, str] | None) -> dict[str, str]:
    """``base`` plus the caller's per-command variables (given explicitly, so not filtered)."""
    env = dict(base)
    if extra:
        for key, value in extra.items():
            if not key or "=" in key or "\x00" in key or "\x00" in value:
                raise PolicyError(f"invalid environment variable name or value: {key!r}")
            env[key] = value
    return env


def check_command(command: str) -> None:
    """Refuse a command no shell could be given: NUL bytes, lone surrogates, not a str."""
    if not isinstance(command, str):
        raise PolicyError(f"a command must be a string, not {type(command).__name__}")
    if "\x00" in command:
        raise PolicyError("the command contains a NUL byte")
    try:
        command.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PolicyError(f"the command is not valid Unicode text (position {exc.start})") from exc
