"""Per-command allowlist rules for ``run`` commands (see docs/approval.md for the table).

Each rule receives one simple command's argv and raises :class:`Unsafe` with the reason when
it is not safe to run without asking. Options are read the way each program reads them
(:mod:`._options`): attached values, clusters, abbreviations; every value and operand that
could name a file is checked to stay inside the workspace and away from secret files.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath

from driveros.approval._options import (
    GREP,
    RG,
    Unsafe,
    is_long_prefix,
    parse_options,
)
from driveros.approval._types import FolderAccess

__all__ = ["ENV_PREFIXES", "Ctx", "Unsafe", "check_path_arg", "classify_argv"]

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
#: Environment prefixes a command may set (``NAME=value cmd``); every other name is refused
#: (``HOME``, ``XDG_*``, ``*_CONFIG*``, ``GIT_*``, ``LD_*``, ``RIPGREP_CONFIG_PATH``,
#: ``PYTEST_ADDOPTS``, ``PYTHONSTARTUP``, ...: they point programs at config or code).
#: Values are plain words (no ``/``, ``$``, spaces), except PYTHONPATH: workspace paths.
ENV_PREFIXES: frozenset[str] = frozenset(
    {
        "CI",
        "NO_COLOR",
        "FORCE_COLOR",
        "CLICOLOR",
        "COLUMNS",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "LC_MESSAGES",
        "PYTHONPATH",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED",
        "PYTHONHASHSEED",
        "PYTHONIOENCODING",
        "PYTHONFAULTHANDLER",
        "PYTHONUTF8",
        "RUST_BACKTRACE",
        "RUST_LOG",
        "GOTRACEBACK",
        "NODE_ENV",
    }
)
_PLAIN_VALUE = re.compile(r"^[A-Za-z0-9_.,:+@%-]*$")


class Ctx:
    """What the rules know besides argv: the workspace root as commands see it, an optional
    ``secret_reason(path)`` that names why a path is a secret file (or None), and the run's
    added folders (``--add-dir``): absolute paths inside one count as inside."""

    def __init__(
        self,
        workspace: PurePosixPath | None,
        secret_reason: Callable[[str], str | None] | None = None,
        folders: Sequence[FolderAccess] = (),
    ) -> None:
        self.workspace = workspace
        self.secret_reason = secret_reason
        self.folders = tuple(folders)
        #: A ``cd`` ran earlier in this command line: git could find another repository.
        self.moved = False
        #: Where the command stands after its ``cd``s, relative to where it started.
        self.cwd = PurePosixPath(".")
        #: Every path-like argument seen, relative to the start directory (or absolute):
        #: checked against symlinks by callers that can see the file system.
        self.paths: list[str] = []
        #: Every glob, relative to the start directory: expanded and checked the same way.
        self.globs: list[str] = []
        #: An allowed ``git`` runs: callers that can read the repository check its config.
        self.runs_git = False

    def folder_of(self, path: PurePosixPath) -> FolderAccess | None:
        """The added folder holding the absolute ``path``, or None."""
        return next((f for f in self.folders if f.holds(path)), None)

    def names_read_only(self, argv: Sequence[str]) -> str | None:
        """The read-only added folder a simple command stands in (after its ``cd``s) or names
        in any word (an operand, an option's value, ``NAME=value``), or None. Text, not
        parsing: a word can reach a path only by spelling it (no expansion is allowed)."""
        for folder in self.folders:
            if folder.writable:
                continue
            if self.cwd.is_absolute() and folder.holds(self.cwd):
                return folder.path
            root = folder.path.rstrip("/")
            if any(re.search(rf"{re.escape(root)}(/|$)", a) for a in argv):
                return folder.path
        return None


def _is_git_dir_name(part: str) -> bool:
    """``.git`` in any spelling a file system may treat as it (``.GIT``, ``.git.``,
    ``.g\u200cit``)."""
    visible = "".join(ch for ch in part if unicodedata.category(ch) != "Cf")
    return visible.rstrip(". ").casefold() == ".git"


def _check_place(value: str, arg: str, ctx: Ctx | None) -> None:
    if value.startswith("~"):
        raise Unsafe(f"{arg!r} reaches outside the workspace")
    p = PurePosixPath(value)
    if ".." in p.parts:
        raise Unsafe(f"{arg!r} reaches outside the workspace")
    if any(_is_git_dir_name(part) for part in p.parts):
        raise Unsafe(f"{arg!r} names git's own directory (never the agent's)")
    if p.is_absolute() and value != "/dev/null":
        ws = ctx.workspace if ctx is not None else None
        inside = ws is not None and (p == ws or ws in p.parents)
        if not inside and (ctx is None or ctx.folder_of(p) is None):
            raise Unsafe(f"{arg!r} is outside the workspace")
    if ctx is not None and ctx.secret_reason is not None and value:
        why = ctx.secret_reason(value)
        if why:
            raise Unsafe(f"{arg!r} names a secret file ({why})")
    if ctx is not None and value:
        ctx.paths.append(value if p.is_absolute() else str(ctx.cwd / p))


def check_path_arg(arg: str, ctx: Ctx | None = None) -> None:
    """Refuse an argument that names, or carries a value naming, a place outside the
    workspace or a secret file: the argument itself, the value after ``=`` (``--file=x``,
    ``cache_dir=x``) and, for a short option, what follows its letters (``-f/etc/x``,
    ``-m../magic``)."""
    _check_place(arg, arg, ctx)
    if "=" in arg:
        _check_place(arg.split("=", 1)[1], arg, ctx)
    if arg.startswith("-") and not arg.startswith("--"):
        for k in range(2, len(arg)):
            if arg[k] in "/.~" or arg[k - 1] in "=,:":
                _check_place(arg[k:], arg, ctx)


def _banned(arg: str, flag: str, *, cluster: bool) -> bool:
    """Whether ``arg`` is the banned ``flag`` in any spelling the program accepts."""
    if arg == flag:
        return True
    if flag.startswith("--"):  # and any abbreviation, with or without "=value"
        return is_long_prefix(arg, flag)
    if len(flag) > 2:  # a single-dash long option (go, find): -name, --name, -name=value
        return arg.startswith("-") and arg.lstrip("-").split("=", 1)[0] == flag[1:]
    # A short option: inside a cluster ("-la") or with an attached value ("-ofile").
    return cluster and arg.startswith("-") and not arg.startswith("--") and flag[1] in arg[1:]


def _no_flags(args: Sequence[str], banned: Sequence[str], cmd: str) -> None:
    cluster = cmd in _SHORT_CLUSTER
    for a in args:
        if a == "--":
            break
        for b in banned:
            if _banned(a, b, cluster=cluster):
                raise Unsafe(f"`{cmd} {b}` is not auto-allowed")


#: Commands whose short options may be clustered ("-la"); others are matched exactly.
_SHORT_CLUSTER = frozenset({"tree", "file", "branch", "cargo", "tail"})

_READ_COMMANDS: dict[str, tuple[str, ...]] = {
    "ls": (),
    "cat": (),
    "head": (),
    "tail": ("-f", "-F", "--follow", "--retry"),  # waits forever
    "wc": ("--files0-from",),
    "grep": ("-R", "--dereference-recursive"),
    "egrep": ("-R", "--dereference-recursive"),
    "fgrep": ("-R", "--dereference-recursive"),
    "rg": ("--pre", "--search-zip", "-z", "-L", "--follow"),
    "tree": ("-o", "--fromfile", "-l"),
    "file": ("-C", "--compile", "-f", "--files-from", "-L", "--dereference"),
    "stat": (),
    "pwd": (),
    "echo": (),
    "cd": (),
    "true": (),
}
_FIND_BANNED = (
    "-exec",
    "-execdir",
    "-ok",
    "-okdir",
    "-delete",
    "-fprint",
    "-fprint0",
    "-fprintf",
    "-fls",
)
#: find options that read outside through symlinks or a list of names.
_FIND_FOLLOW = ("-files0-from", "-L", "-H", "-follow")


def _grep(argv: Sequence[str], ctx: Ctx) -> None:
    """grep and rg: parsed with their own option tables; the pattern (an operand or an
    ``-e``/``--regexp`` value) is not a path, everything else may be."""
    cmd, rest = argv[0], argv[1:]
    table = RG if cmd == "rg" else GREP
    parsed = parse_options(rest, table, cmd)
    _no_flags([o for o, _ in parsed.options], _READ_COMMANDS[cmd], cmd)
    given = False
    for option, value in parsed.options:
        if option in ("-e", "--regexp"):
            given = True
            continue
        if option in ("-f", "--file"):
            given = True
        if value is not None:
            check_path_arg(value, ctx)
    operands = parsed.operands if given else parsed.operands[1:]
    for a in operands:
        check_path_arg(a, ctx)


def _read_command(argv: Sequence[str], ctx: Ctx) -> None:
    cmd, rest = argv[0], argv[1:]
    if cmd in _GREP:
        _grep(argv, ctx)
        return
    _no_flags(rest, _READ_COMMANDS[cmd], cmd)
    if cmd == "echo":
        return
    if cmd == "cd" and (len(rest) != 1 or rest[0] == "-"):
        raise Unsafe("`cd` is only auto-allowed with one directory in the workspace")
    for a in rest:
        check_path_arg(a, ctx)
    if cmd == "cd":
        ctx.cwd = ctx.cwd / rest[0]


def _find(argv: Sequence[str], ctx: Ctx) -> None:
    for a in argv[1:]:
        for banned in _FIND_BANNED:
            if _banned(a, banned, cluster=False):
                raise Unsafe(f"`find {banned}` changes files or runs commands")
        for banned in _FIND_FOLLOW:
            if _banned(a, banned, cluster=False):
                raise Unsafe(f"`find {banned}` follows symlinks or reads a list of names")
        check_path_arg(a, ctx)


_GIT_READ = frozenset({"status", "diff", "log", "show", "branch"})
_GIT_GLOBAL_OK = frozenset({"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs"})
_GIT_BANNED = (
    "--output",
    "--ext-diff",
    "--exec",
    "--textconv",
    "--open-files-in-pager",
    "--show-signature",  # runs gpg.program
)
_BRANCH_WRITE = (
    "-d",
    "-D",
    "--delete",
    "-m",
    "-M",
    "--move",
    "-c",
    "-C",
    "--copy",
    "-f",
    "--force",
    "-u",
    "--set-upstream-to",
    "--unset-upstream",
    "--edit-description",
    "-t",
    "--track",
    "--no-track",
    "--create-reflog",
)
_BRANCH_VALUE_OPTS = frozenset(
    {"--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format"}
)


def _git(argv: Sequence[str], ctx: Ctx) -> None:
    if ctx.moved:
        raise Unsafe(
            "git after `cd` is not auto-allowed (the directory may hold its own repository); "
            "run git from the workspace root"
        )
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        a = argv[i]
        if a not in _GIT_GLOBAL_OK:
            # -C, -c, --git-dir, --work-tree, --exec-path, --config-env, ...: another
            # repository or configuration (a planted `sub/.git` runs its own fsmonitor).
            raise Unsafe(f"git option {a} is not auto-allowed")
        i += 1
    if i >= len(argv):
        raise Unsafe("bare `git` is not auto-allowed")
    sub, rest = argv[i], argv[i + 1 :]
    for a in rest:
        check_path_arg(a, ctx)
    if sub not in _GIT_READ:
        raise Unsafe(f"`git {sub}` is not a read-only git command")
    _no_flags(rest, _GIT_BANNED, "git")
    for a in rest:
        if a == "--":
            break
        if "%G" in a or "%(signature" in a:
            raise Unsafe(f"git format {a!r} verifies signatures (runs gpg.program)")
    if sub == "branch":
        _no_flags(rest, _BRANCH_WRITE, "branch")
        listing = any(a == "-l" or is_long_prefix(a, "--list") for a in rest)
        positional, j = [], 0
        while j < len(rest):
            if rest[j] in _BRANCH_VALUE_OPTS:
                j += 2
                continue
            if not rest[j].startswith("-"):
                positional.append(rest[j])
            j += 1
        if positional and not listing:
            raise Unsafe("`git branch NAME` creates a branch")
    ctx.runs_git = True


def _needs(argv: Sequence[str], flag: str) -> None:
    if flag not in argv:
        raise Unsafe(f"`{argv[0]}` is only auto-allowed with {flag}")


#: Go build flags that run or substitute programs or files: never auto-allowed.
_GO_BANNED = (
    "-exec",
    "-toolexec",
    "-vettool",
    "-overlay",
    "-ldflags",
    "-gcflags",
    "-asmflags",
    "-gccgoflags",
    "-modfile",
    "-pgo",
)


def _test_runner(argv: Sequence[str], ctx: Ctx) -> None:
    cmd, rest = argv[0], list(argv[1:])
    match cmd:
        case "pytest" | "py.test":
            _no_flags(rest, ("--basetemp",), cmd)
        case "tox" | "mypy" | "pyright":
            _no_flags(
                rest,
                ("--install-types", "--createstub", "--python-executable", "--pythonpath"),
                cmd,
            )
        case "go":
            if not rest or rest[0] not in ("test", "vet"):
                raise Unsafe("only `go test` and `go vet` are auto-allowed")
            for a in rest:
                for banned in _GO_BANNED:
                    if _banned(a, banned, cluster=False):
                        raise Unsafe(f"`go {banned}` is not auto-allowed")
        case "cargo":
            if not rest or rest[0] not in ("test", "check"):
                raise Unsafe("only `cargo test` and `cargo check` are auto-allowed")
            _no_flags(rest, ("--config", "-Z"), cmd)
        case "npm":
            if rest[:1] not in (["test"], ["t"]) and rest[:2] != ["run", "test"]:
                raise Unsafe("only `npm test` is auto-allowed")
        case "make":
            targets = [a for a in rest if not a.startswith("-")]
            if targets != ["test"] or any("=" in a for a in rest):
                raise Unsafe("only `make test` is auto-allowed")
            if not all(
                a in ("-k", "-s", "--no-print-directory") or re.fullmatch(r"-j\d*", a)
                for a in rest
                if a != "test"
            ):
                raise Unsafe("only `make test` is auto-allowed")
        case "ruff":
            if rest[:1] == ["check"]:
                _no_flags(rest, ("--fix", "--unsafe-fixes", "--add-noqa", "--watch"), cmd)
            elif rest[:1] == ["format"]:
                if "--check" not in rest and "--diff" not in rest:
                    raise Unsafe("`ruff format` is only auto-allowed with --check or --diff")
            else:
                raise Unsafe("only `ruff check` and `ruff format --check` are auto-allowed")
        case "tsc":
            _needs(argv, "--noEmit")
            _no_flags(rest, ("-w", "--watch"), cmd)
        case _:
            raise Unsafe(f"`{cmd}` is not on the allowlist")
    for a in rest:
        check_path_arg(a, ctx)


def _python(argv: Sequence[str], ctx: Ctx) -> None:
    if len(argv) >= 3 and argv[1] == "-m" and argv[2] in ("pytest", "mypy", "unittest"):
        _test_runner(["pytest" if argv[2] == "unittest" else argv[2], *argv[3:]], ctx)
        return
    raise Unsafe("only `python -m pytest|mypy|unittest` is auto-allowed")


def _timeout(argv: Sequence[str], ctx: Ctx) -> None:
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in ("-s", "-k", "--signal", "--kill-after") else 1
    if i + 1 >= len(argv):
        raise Unsafe("`timeout` without a command")
    classify_argv(list(argv[i + 1 :]), ctx)


_GREP = frozenset({"grep", "egrep", "fgrep", "rg"})
_Rule = Callable[[Sequence[str], Ctx], None]
_RULES: dict[str, _Rule] = {
    **dict.fromkeys(_READ_COMMANDS, _read_command),
    "find": _find,
    "git": _git,
    "timeout": _timeout,
    **dict.fromkeys(
        (
            "pytest",
            "py.test",
            "tox",
            "mypy",
            "pyright",
            "go",
            "cargo",
            "npm",
            "make",
            "ruff",
            "tsc",
        ),
        _test_runner,
    ),
}
_PYTHON = re.compile(r"^python(3(\.\d+)?)?$")
#: The project's own environments (linked into scratch copies): ``.venv/bin/pytest`` is judged
#: as ``pytest``. Only these relative forms; any other path stays refused.
_ENV_TOOL = re.compile(r"^(\./)?(\.venv/bin|venv/bin|env/bin|node_modules/\.bin)/([^/]+)$")


def _check_assignment(name: str, value: str, ctx: Ctx) -> None:
    if name not in ENV_PREFIXES:
        allowed = ", ".join(sorted(ENV_PREFIXES))
        raise Unsafe(f"setting {name} is not auto-allowed (allowed: {allowed})")
    if name == "PYTHONPATH":
        for part in value.split(":"):
            check_path_arg(part, ctx)
    elif not _PLAIN_VALUE.match(value):
        raise Unsafe(f"setting {name} to {value!r} is not auto-allowed (plain words only)")


def classify_argv(argv: list[str], ctx: Ctx) -> None:
    words = list(argv)
    while argv and (m := _ASSIGN.match(argv[0])):
        _check_assignment(m.group(1), m.group(2), ctx)
        argv = argv[1:]
    if not argv:
        return  # a bare assignment only affects this shell
    name = argv[0]
    env_tool = _ENV_TOOL.match(name)
    if env_tool is not None and (
        _PYTHON.match(env_tool.group(3)) or _RULES.get(env_tool.group(3)) is _test_runner
    ):
        name = env_tool.group(3)
        argv = [name, *argv[1:]]
    if "/" in name:
        raise Unsafe(f"`{name}`: only commands found on PATH are auto-allowed")
    rule = _python if _PYTHON.match(name) else _RULES.get(name)
    if rule is None:
        raise Unsafe(f"`{name}` is not on the allowlist")
    rule(argv, ctx)
    # A read-only added folder is for reading: the runners and checkers run code and write
    # caches where they stand, so they never name one (docs/approval.md).
    if rule in (_test_runner, _python) and (folder := ctx.names_read_only(words)):
        raise Unsafe(
            f"`{name}` runs code or writes where it works; {folder!r} is a read-only added "
            "folder (only reading commands may name it)"
        )
