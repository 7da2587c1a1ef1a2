"""A shell-aware classifier for ``run`` commands: which ones are safe to auto-allow.

The command is tokenized the way a POSIX shell would (quotes, escapes, comments, operators),
split into simple commands at ``;``, ``&&``, ``||``, ``|`` and newlines, and allowed only when
every simple command is on the allowlist (see docs/review.md). Anything the tokenizer cannot
vouch for (command substitution, variable expansion, background jobs, subshells, output
redirection to a file, here-documents) is blocked with a reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from driveros.review.approval._types import Decision


class _Unsafe(Exception):
    """Raised inside the classifier; its message becomes the block reason."""


@dataclass(frozen=True)
class _Tok:
    text: str
    op: bool = False


_OPS = (
    "&&",
    "||",
    "|&",
    ";;",
    ">>",
    "<<<",
    "<<",
    ">&",
    "<&",
    "&>>",
    "&>",
    ">|",
    "<>",
    ";",
    "|",
    "&",
    ">",
    "<",
    "(",
    ")",
    "\n",
)
_SEPARATORS = {";", "&&", "||", "|", "|&", "\n"}
_EXPANSION = re.compile(r"\$[A-Za-z_{(0-9@*#?!$-]")


def tokenize(command: str) -> list[_Tok]:
    """Split a command like a POSIX shell. Raises _Unsafe for what we will not reason about."""
    toks: list[_Tok] = []
    word: list[str] = []
    in_word = False
    i, n = 0, len(command)

    def flush() -> None:
        nonlocal in_word
        if in_word:
            toks.append(_Tok("".join(word)))
        word.clear()
        in_word = False

    while i < n:
        c = command[i]
        if c == "'":
            end = command.find("'", i + 1)
            if end < 0:
                raise _Unsafe("unterminated quote")
            word.append(command[i + 1 : end])
            in_word = True
            i = end + 1
        elif c == '"':
            j = i + 1
            buf: list[str] = []
            while j < n and command[j] != '"':
                if command[j] == "\\" and j + 1 < n and command[j + 1] in '"\\$`\n':
                    buf.append(command[j + 1])
                    j += 2
                    continue
                if command[j] == "`" or _EXPANSION.match(command, j):
                    raise _Unsafe("command substitution or variable expansion")
                buf.append(command[j])
                j += 1
            if j >= n:
                raise _Unsafe("unterminated quote")
            word.append("".join(buf))
            in_word = True
            i = j + 1
        elif c == "\\":
            if i + 1 < n and command[i + 1] != "\n":
                word.append(command[i + 1])
                in_word = True
            i += 2
        elif c == "`" or _EXPANSION.match(command, i):
            raise _Unsafe("command substitution or variable expansion")
        elif c == "#" and not in_word:
            end = command.find("\n", i)
            i = n if end < 0 else end
        elif c in " \t":
            flush()
            i += 1
        elif c in ";&|<>()\n":
            op = next(o for o in _OPS if command.startswith(o, i))
            # "2>" or "2>&1": an all-digit word right before a redirection is its fd number.
            if op[0] in "<>" and in_word and "".join(word).isdigit():
                word.clear()
                in_word = False
            else:
                flush()
            toks.append(_Tok(op, op=True))
            i += len(op)
        else:
            word.append(c)
            in_word = True
            i += 1
    flush()
    return toks


def _simple_commands(toks: Sequence[_Tok]) -> list[list[str]]:
    """Split at separators, vetting operators and redirections on the way."""
    cmds: list[list[str]] = [[]]
    i = 0
    while i < len(toks):
        t = toks[i]
        if not t.op:
            cmds[-1].append(t.text)
        elif t.text in _SEPARATORS:
            cmds.append([])
        elif t.text == "&":
            raise _Unsafe("background jobs (&) are not auto-allowed")
        elif t.text in ("(", ")"):
            raise _Unsafe("subshells are not auto-allowed")
        elif t.text in ("<<", "<<<"):
            raise _Unsafe("here-documents are not auto-allowed")
        elif t.text in (">", ">>", ">|", "&>", "&>>", "<>", ">&", "<&", "<"):
            if i + 1 >= len(toks) or toks[i + 1].op:
                raise _Unsafe("incomplete redirection")
            target = toks[i + 1].text
            if t.text in (">&", "<&") and (target.isdigit() or target == "-"):
                pass  # duplicating a descriptor, e.g. 2>&1
            elif t.text == "<":
                _check_path_arg(target)  # reading a file
            elif target != "/dev/null":
                raise _Unsafe(f"redirection writes to a file ({t.text} {target})")
            i += 1
        else:
            raise _Unsafe(f"operator {t.text!r} is not auto-allowed")
        i += 1
    cmds = [c for c in cmds if c]
    if not cmds:
        raise _Unsafe("empty command")
    return cmds


# -- per-command rules ---------------------------------------------------------------------

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=")
_DANGEROUS_VARS = re.compile(
    r"^(LD_\w*|DYLD_\w*|PATH|BASH_ENV|ENV|SHELLOPTS|PS4|PROMPT_COMMAND|IFS|GIT_\w*|PAGER|EDITOR|PYTHONSTARTUP|NODE_OPTIONS)$"
)


class _Ctx:
    def __init__(self, workspace: PurePosixPath | None) -> None:
        self.workspace = workspace


def _check_path_arg(arg: str, ctx: _Ctx | None = None) -> None:
    """Refuse arguments that name places outside the workspace."""
    value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
    if value.startswith("~"):
        raise _Unsafe(f"{arg!r} reaches outside the workspace")
    p = PurePosixPath(value)
    if ".." in p.parts:
        raise _Unsafe(f"{arg!r} reaches outside the workspace")
    if p.is_absolute() and value != "/dev/null":
        ws = ctx.workspace if ctx is not None else None
        if ws is None or not (p == ws or ws in p.parents):
            raise _Unsafe(f"{arg!r} is outside the workspace")


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
                raise _Unsafe(f"`{cmd} {b}` is not auto-allowed")


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


def _read_command(argv: Sequence[str], ctx: _Ctx) -> None:
    cmd, rest = argv[0], argv[1:]
    _no_flags(rest, _READ_COMMANDS[cmd], cmd)
    if cmd == "echo":
        return
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
        _check_path_arg(a, ctx)


def _find(argv: Sequence[str], ctx: _Ctx) -> None:
    for a in argv[1:]:
        if a in _FIND_BANNED:
            raise _Unsafe(f"`find {a}` changes files or runs commands")
        _check_path_arg(a, ctx)


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


def _git(argv: Sequence[str], ctx: _Ctx) -> None:
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        a = argv[i]
        if a in ("--no-pager", "-P", "--no-optional-locks"):
            i += 1
        elif a == "-C" and i + 1 < len(argv):
            _check_path_arg(argv[i + 1], ctx)
            i += 2
        else:
            raise _Unsafe(f"git option {a} is not auto-allowed")
    if i >= len(argv):
        raise _Unsafe("bare `git` is not auto-allowed")
    sub, rest = argv[i], argv[i + 1 :]
    if sub not in _GIT_READ:
        raise _Unsafe(f"`git {sub}` is not a read-only git command")
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
            raise _Unsafe("`git branch NAME` creates a branch")


def _needs(argv: Sequence[str], flag: str) -> None:
    if flag not in argv:
        raise _Unsafe(f"`{argv[0]}` is only auto-allowed with {flag}")


def _test_runner(argv: Sequence[str], ctx: _Ctx) -> None:
    cmd, rest = argv[0], list(argv[1:])
    match cmd:
        case "pytest" | "py.test":
            _no_flags(rest, ("--basetemp",), cmd)
        case "tox" | "mypy" | "pyright":
            _no_flags(rest, ("--install-types", "--createstub"), cmd)
        case "go":
            if not rest or rest[0] not in ("test", "vet"):
                raise _Unsafe("only `go test` and `go vet` are auto-allowed")
            _no_flags(rest, ("-exec", "-toolexec", "--exec", "--toolexec"), cmd)
        case "cargo":
            if not rest or rest[0] not in ("test", "check"):
                raise _Unsafe("only `cargo test` and `cargo check` are auto-allowed")
            _no_flags(rest, ("--config",), cmd)
        case "npm":
            if rest[:1] not in (["test"], ["t"]) and rest[:2] != ["run", "test"]:
                raise _Unsafe("only `npm test` is auto-allowed")
        case "make":
            targets = [a for a in rest if not a.startswith("-")]
            if targets != ["test"] or any("=" in a for a in rest):
                raise _Unsafe("only `make test` is auto-allowed")
            if not all(
                a in ("-k", "-s", "--no-print-directory") or re.fullmatch(r"-j\d*", a)
                for a in rest
                if a != "test"
            ):
                raise _Unsafe("only `make test` is auto-allowed")
        case "ruff":
            if rest[:1] == ["check"]:
                _no_flags(rest, ("--fix", "--unsafe-fixes", "--add-noqa", "--watch"), cmd)
            elif rest[:1] == ["format"]:
                if "--check" not in rest and "--diff" not in rest:
                    raise _Unsafe("`ruff format` is only auto-allowed with --check or --diff")
            else:
                raise _Unsafe("only `ruff check` and `ruff format --check` are auto-allowed")
        case "tsc":
            _needs(argv, "--noEmit")
            _no_flags(rest, ("-w", "--watch"), cmd)
        case _:
            raise _Unsafe(f"`{cmd}` is not on the allowlist")


def _python(argv: Sequence[str], ctx: _Ctx) -> None:
    if len(argv) >= 3 and argv[1] == "-m" and argv[2] in ("pytest", "mypy", "unittest"):
        _test_runner(["pytest" if argv[2] == "unittest" else argv[2], *argv[3:]], ctx)
        return
    raise _Unsafe("only `python -m pytest|mypy|unittest` is auto-allowed")


def _timeout(argv: Sequence[str], ctx: _Ctx) -> None:
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in ("-s", "-k", "--signal", "--kill-after") else 1
    if i + 1 >= len(argv):
        raise _Unsafe("`timeout` without a command")
    _classify_argv(list(argv[i + 1 :]), ctx)


_Rule = Callable[[Sequence[str], _Ctx], None]
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


def _classify_argv(argv: list[str], ctx: _Ctx) -> None:
    while argv and (m := _ASSIGN.match(argv[0])):
        if _DANGEROUS_VARS.match(m.group(1)):
            raise _Unsafe(f"setting {m.group(1)} is not auto-allowed")
        argv = argv[1:]
    if not argv:
        return  # a bare assignment only affects this shell
    name = argv[0]
    if "/" in name:
        raise _Unsafe(f"`{name}`: only commands found on PATH are auto-allowed")
    if _PYTHON.match(name):
        _python(argv, ctx)
        return
    rule = _RULES.get(name)
    if rule is None:
        raise _Unsafe(f"`{name}` is not on the allowlist")
    rule(argv, ctx)


def classify_command(command: str, *, workspace: str | None = None) -> Decision:
    """Whether the policy auto-allows ``command``; the reason names what blocked it.

    ``workspace`` is the workspace root as the command sees it; absolute paths below it are
    allowed, every other absolute path, ``~`` and ``..`` are not.
    """
    ctx = _Ctx(PurePosixPath(workspace) if workspace else None)
    try:
        for argv in _simple_commands(tokenize(command)):
            _classify_argv(argv, ctx)
    except _Unsafe as exc:
        return Decision(allowed=False, reason=f"blocked by policy: {exc}")
    return Decision(allowed=True, reason="allowed by policy: read-only or test command")
