"""A shell-aware classifier for ``run`` commands: which ones are safe to auto-allow.

The command is tokenized the way a POSIX shell would (quotes, escapes, comments, operators),
split into simple commands at ``;``, ``&&``, ``||``, ``|`` and newlines, and allowed only when
every simple command is on the allowlist (see docs/approval.md). Anything the tokenizer cannot
vouch for (command substitution, variable expansion, background jobs, subshells, output
redirection to a file, here-documents) is blocked with a reason.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from driveros.approval._rules import Ctx, Unsafe, check_path_arg, classify_argv
from driveros.approval._types import Decision, FolderAccess
from driveros.sandbox import secret_path_reason


@dataclass(frozen=True)
class _Tok:
    text: str
    op: bool = False
    #: Offsets in ``text`` of unquoted ``*``, ``?`` and ``[``: the shell globs this word.
    glob: tuple[int, ...] = ()


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
#: A "$" that expands inside double quotes...
_EXPANSION = re.compile(r"\$[A-Za-z_{(0-9@*#?!$-]")
#: ...and outside them, where $'...' and $"..." are special quoting too.
_BARE_EXPANSION = re.compile(r"\$[A-Za-z_{(0-9@*#?!$'\"-]")
#: Brace expansion ({a,b} or {1..3}) can produce any path: refused when unquoted.
_BRACES = re.compile(r"\{[^{}\s]*(,|\.\.)[^{}\s]*\}")


def tokenize(command: str) -> list[_Tok]:
    """Split a command like a POSIX shell. Raises Unsafe for what we will not reason about."""
    toks: list[_Tok] = []
    word: list[str] = []
    globs: list[int] = []
    in_word = False
    i, n = 0, len(command)

    def flush() -> None:
        nonlocal in_word
        if in_word:
            toks.append(_Tok("".join(word), glob=tuple(globs)))
        word.clear()
        globs.clear()
        in_word = False

    while i < n:
        c = command[i]
        if c == "'":
            end = command.find("'", i + 1)
            if end < 0:
                raise Unsafe("unterminated quote")
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
                    raise Unsafe("command substitution or variable expansion")
                buf.append(command[j])
                j += 1
            if j >= n:
                raise Unsafe("unterminated quote")
            word.append("".join(buf))
            in_word = True
            i = j + 1
        elif c == "\\":
            if i + 1 < n and command[i + 1] != "\n":
                word.append(command[i + 1])
                in_word = True
            i += 2
        elif c == "`" or _BARE_EXPANSION.match(command, i):
            raise Unsafe("command substitution or variable expansion")
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
                globs.clear()
                in_word = False
            else:
                flush()
            toks.append(_Tok(op, op=True))
            i += len(op)
        else:
            if c == "{" and _BRACES.match(command, i):
                raise Unsafe("brace expansion is not auto-allowed")
            if c in "*?[":
                globs.append(sum(len(w) for w in word))
            word.append(c)
            in_word = True
            i += 1
    flush()
    return toks


#: Names of typical secret files: a glob that matches one of them may expand to a secret.
_SECRET_SAMPLES = (
    ".env",
    "prod.env",
    "server.pem",
    "server.key",
    "id_rsa",
    "id_ed25519",
    "store.p12",
    "prod.tfvars",
    "terraform.tfstate",
    "service-account-prod.json",
    "application_default_credentials.json",
    "credentials.db",
)


def check_glob(word: _Tok, ctx: Ctx) -> None:
    """Refuse a word the shell would glob unless every expansion provably stays inside the
    workspace and cannot become an option: dash matches ``.?`` against ``..``, ``*`` against
    a planted file named ``--pre=x``."""
    if not word.glob:
        return
    text, first = word.text, min(word.glob)
    if first == 0 or text.startswith(("-", "~")):
        raise Unsafe(
            f"the glob {text!r} could expand to an option or anything: quote it, "
            "or start it with ./"
        )
    start = 0
    for comp in text.split("/"):
        end = start + len(comp)
        if comp.startswith(".") and any(start <= g < end for g in word.glob):
            raise Unsafe(f"the glob {text!r} can match `.` or `..`")
        start = end + 1
    literal = text[: text.rfind("/", 0, first) + 1]
    if literal:
        check_path_arg(literal.rstrip("/") or "/", ctx)
    ctx.globs.append(text if text.startswith("/") else str(ctx.cwd / text))
    if ctx.secret_reason is not None:
        last = text.rsplit("/", 1)[-1]
        for sample in _SECRET_SAMPLES:
            if sample.startswith(".") and not last.startswith("."):
                continue  # the shell's * and ? never match a leading dot
            if fnmatch.fnmatchcase(sample, last) and ctx.secret_reason(sample):
                raise Unsafe(f"the glob {text!r} can expand to a secret file such as {sample}")


def _simple_commands(toks: Sequence[_Tok], ctx: Ctx) -> list[list[str]]:
    """Split at separators, vetting operators, redirections and globs on the way."""
    cmds: list[list[str]] = [[]]
    i = 0
    while i < len(toks):
        t = toks[i]
        if not t.op:
            check_glob(t, ctx)
            cmds[-1].append(t.text)
        elif t.text in _SEPARATORS:
            cmds.append([])
        elif t.text == "&":
            raise Unsafe("background jobs (&) are not auto-allowed")
        elif t.text in ("(", ")"):
            raise Unsafe("subshells are not auto-allowed")
        elif t.text in ("<<", "<<<"):
            raise Unsafe("here-documents are not auto-allowed")
        elif t.text in (">", ">>", ">|", "&>", "&>>", "<>", ">&", "<&", "<"):
            if i + 1 >= len(toks) or toks[i + 1].op:
                raise Unsafe("incomplete redirection")
            target = toks[i + 1].text
            if toks[i + 1].glob:
                raise Unsafe(f"a glob in a redirection ({t.text} {target})")
            if t.text in (">&", "<&") and (target.isdigit() or target == "-"):
                pass  # duplicating a descriptor, e.g. 2>&1
            elif t.text == "<":
                check_path_arg(target, ctx)  # reading a file
            elif target != "/dev/null":
                raise Unsafe(f"redirection writes to a file ({t.text} {target})")
            i += 1
        else:
            raise Unsafe(f"operator {t.text!r} is not auto-allowed")
        i += 1
    cmds = [c for c in cmds if c]
    if not cmds:
        raise Unsafe("empty command")
    return cmds


def classify_command(
    command: str,
    *,
    workspace: str | None = None,
    secret_reason: Callable[[str], str | None] | None = None,
    folders: Sequence[FolderAccess] = (),
) -> Decision:
    """Whether the policy auto-allows ``command``; the reason names what blocked it.

    ``workspace`` is the workspace root as the command sees it; absolute paths below it are
    allowed, and so are those inside one of ``folders`` (the run's added folders; a
    read-only one only for reading commands); every other absolute path, ``~`` and ``..``
    are not. ``secret_reason(path)``
    (default: :func:`driveros.sandbox.secret_path_reason`, the one deny list of the fence and
    ``search``) names why a file argument is a secret file; such arguments, and globs that
    could expand to one, are refused.
    """
    return _classify(command, workspace=workspace, secret_reason=secret_reason, folders=folders)[0]


@dataclass(frozen=True)
class CommandReach:
    """What an allowed command touches: its path-like arguments and globs, relative to where
    it starts (or absolute), and whether it runs ``git`` (in the directory it starts in)."""

    paths: list[str]
    globs: list[str]
    runs_git: bool


def command_reach(
    command: str, *, workspace: str | None = None, folders: Sequence[FolderAccess] = ()
) -> CommandReach:
    """What an allowed ``command`` reaches (nothing when the command is refused)."""
    decision, ctx = _classify(command, workspace=workspace, secret_reason=None, folders=folders)
    if not decision.allowed:
        return CommandReach([], [], runs_git=False)
    return CommandReach(ctx.paths, ctx.globs, runs_git=ctx.runs_git)


def _classify(
    command: str,
    *,
    workspace: str | None,
    secret_reason: Callable[[str], str | None] | None,
    folders: Sequence[FolderAccess] = (),
) -> tuple[Decision, Ctx]:
    ctx = Ctx(
        PurePosixPath(workspace) if workspace else None,
        secret_reason or secret_path_reason,
        folders,
    )
    try:
        for argv in _simple_commands(tokenize(command), ctx):
            classify_argv(argv, ctx)
            if argv and argv[0] == "cd":
                ctx.moved = True
    except Unsafe as exc:
        return Decision(allowed=False, reason=f"blocked by policy: {exc}"), ctx
    return Decision(allowed=True, reason="allowed by policy: read-only or test command"), ctx
