"""Per-command allowlist rules for ``run`` commands (see docs/review.md for the table).

Each rule receives one simple command's argv and raises :class:`Unsafe` with the reason when
it is not safe to run without asking.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath


class Unsafe(Exception):
    """Raised inside the classifier; its message becomes the block reason."""


_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=")
_DANGEROUS_VARS = re.compile(
    r"^(LD_\w*|DYLD_\w*|PATH|BASH_ENV|ENV|SHELLOPTS|PS4|PROMPT_COMMAND|IFS|GIT_\w*|PAGER|EDITOR|PYTHONSTARTUP|NODE_OPTIONS)$"
)


class Ctx:
    """What the rules know besides argv: the workspace root as commands see it."""

    def __init__(self, workspace: PurePosixPath | None) -> None:
        self.workspace = workspace


def check_path_arg(arg: str, ctx: Ctx | None = None) -> None:
    """Refuse arguments that name places outside the workspace."""
    value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
    if value.startswith("~"):
        raise Unsafe(f"{arg!r} reaches outside the workspace")
    p = PurePosixPath(value)
    if ".." in p.parts:
        raise Unsafe(f"{arg!r} reaches outside the workspace")
    if p.is_absolute() and value != "/dev/null":
        ws = ctx.workspace if ctx is not None else None
        if ws is None or not (p == ws or ws in p.parents):
            raise Unsafe(f"{arg!r} is outside the workspace")


def _banned(arg: str, flag: str, *, cluster: bool) -> bool:
    if arg == flag or (flag.startswith("--") and arg.startswith(flag + "=")):
        return True
    short = len(flag) == 2 and flag[0] == "-"
    # "-la" style clusters, and "-ofile" style attached values.
    return (
        cluster
        and short
        and arg.startswith("-")
        and not arg.startswith("--")
        and flag[1] in arg[1:]
    )


def _no_flags(args: Sequence[str], banned: Sequence[str], cmd: str) -> None:
    cluster = cmd in _SHORT_CLUSTER
    for a in args:
        if a == "--":
            break
        for b in banned:
            if _banned(a, b, cluster=cluster):
                raise Unsafe(f"`{cmd} {b}` is not auto-allowed")


#: Commands whose short options may be clustered ("-la"); others are matched exactly.
_SHORT_CLUSTER = frozenset({"tree", "file", "branch"})

_READ_COMMANDS: dict[str, tuple[str, ...]] = {
    "ls": (),
    "cat": (),
    "head": (),
    "tail": (),
    "wc": (),
    "grep": (),
    "egrep": (),
    "fgrep": (),
    "rg": ("--pre",),
    "tree": ("-o",),
    "file": ("-C", "--compile"),
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


_GREP = frozenset({"grep", "egrep", "fgrep", "rg"})
_PATTERN_OPTS = frozenset({"-e", "--regexp"})


def _read_command(argv: Sequence[str], ctx: Ctx) -> None:
    cmd, rest = argv[0], argv[1:]
    _no_flags(rest, _READ_COMMANDS[cmd], cmd)
    if cmd == "echo":
        return
    if cmd == "cd" and (len(rest) != 1 or rest[0] == "-"):
        raise Unsafe("`cd` is only auto-allowed with one directory in the workspace")
    # For grep and rg the first operand is the pattern, not a path (unless -e gives it).
    pattern_pending = cmd in _GREP and not any(a in _PATTERN_OPTS for a in rest)
    skip_next = False
    for a in rest:
        if skip_next:
            skip_next = False
            continue
        if cmd in _GREP and a in _PATTERN_OPTS:
            skip_next = True
            continue
        if pattern_pending and not a.startswith("-"):
            pattern_pending = False
            continue
        check_path_arg(a, ctx)


def _find(argv: Sequence[str], ctx: Ctx) -> None:
    for a in argv[1:]:
        if a in _FIND_BANNED:
            raise Unsafe(f"`find {a}` changes files or runs commands")
        check_path_arg(a, ctx)


_GIT_READ = frozenset({"status", "diff", "log", "show", "branch"})
_GIT_BANNED = ("--output", "--ext-diff", "--exec")
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
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        a = argv[i]
        if a in ("--no-pager", "-P", "--no-optional-locks"):
            i += 1
        elif a == "-C" and i + 1 < len(argv):
            check_path_arg(argv[i + 1], ctx)
            i += 2
        else:
            raise Unsafe(f"git option {a} is not auto-allowed")
    if i >= len(argv):
        raise Unsafe("bare `git` is not auto-allowed")
    sub, rest = argv[i], argv[i + 1 :]
    for a in rest:
        check_path_arg(a, ctx)
    if sub not in _GIT_READ:
        raise Unsafe(f"`git {sub}` is not a read-only git command")
    _no_flags(rest, _GIT_BANNED, "git")
    if sub == "branch":
        _no_flags(rest, _BRANCH_WRITE, "branch")
        listing = any(a in ("-l", "--list") for a in rest)
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


def _needs(argv: Sequence[str], flag: str) -> None:
    if flag not in argv:
        raise Unsafe(f"`{argv[0]}` is only auto-allowed with {flag}")


def _test_runner(argv: Sequence[str], ctx: Ctx) -> None:
    cmd, rest = argv[0], list(argv[1:])
    match cmd:
        case "pytest" | "py.test":
            _no_flags(rest, ("--basetemp",), cmd)
        case "tox" | "mypy" | "pyright":
            _no_flags(rest, ("--install-types", "--createstub"), cmd)
        case "go":
            if not rest or rest[0] not in ("test", "vet"):
                raise Unsafe("only `go test` and `go vet` are auto-allowed")
            _no_flags(rest, ("-exec", "-toolexec", "--exec", "--toolexec"), cmd)
        case "cargo":
            if not rest or rest[0] not in ("test", "check"):
                raise Unsafe("only `cargo test` and `cargo check` are auto-allowed")
            _no_flags(rest, ("--config",), cmd)
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


def classify_argv(argv: list[str], ctx: Ctx) -> None:
    while argv and (m := _ASSIGN.match(argv[0])):
        if _DANGEROUS_VARS.match(m.group(1)):
            raise Unsafe(f"setting {m.group(1)} is not auto-allowed")
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
    if _PYTHON.match(name):
        _python(argv, ctx)
        return
    rule = _RULES.get(name)
    if rule is None:
        raise Unsafe(f"`{name}` is not on the allowlist")
    rule(argv, ctx)
