"""Unified diffs (git style, ``a/``/``b/`` headers) and a terminal summary of changes."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from driveros.approval import display_command
from driveros.review._models import FileChange

_NO_EOL = "\\ No newline at end of file"


def _lines(text: str | None) -> list[str]:
    return [] if not text else text.splitlines(keepends=True)


def _body(before: str | None, after: str | None) -> tuple[list[str], int, int]:
    out: list[str] = []
    adds = dels = 0
    hunks = difflib.unified_diff(_lines(before), _lines(after), n=3, lineterm="")
    for i, line in enumerate(hunks):
        if i < 2:
            continue  # difflib's own ---/+++ lines; we write git-style headers ourselves
        if line.startswith("@@"):
            out.append(line.rstrip("\n"))
            continue
        if line.startswith("+"):
            adds += 1
        elif line.startswith("-"):
            dels += 1
        if line.endswith("\n"):
            out.append(line[:-1])
        else:
            out.append(line.rstrip("\r"))
            out.append(_NO_EOL)
    return out, adds, dels


def unified_diff(
    *,
    path: str,
    action: str,
    old_path: str | None = None,
    before: str | None,
    after: str | None,
    binary: bool = False,
    mode: str | None = None,
    old_mode: str | None = None,
) -> tuple[str, int, int]:
    """A git-style diff for one file and its (additions, deletions) line counts."""
    src = old_path or path
    head = [f"diff --git a/{src} b/{path}"]
    if action == "create":
        head.append(f"new file mode {mode or '100644'}")
    elif action == "delete":
        head.append(f"deleted file mode {old_mode or '100644'}")
    elif action == "rename":
        head += [f"rename from {src}", f"rename to {path}"]
    if old_mode and mode and old_mode != mode and action in ("modify", "rename"):
        head += [f"old mode {old_mode}", f"new mode {mode}"]
    a = "/dev/null" if action == "create" else f"a/{src}"
    b = "/dev/null" if action == "delete" else f"b/{path}"
    if binary:
        head.append(f"Binary files {a} and {b} differ")
        return "\n".join(head) + "\n", 0, 0
    body, adds, dels = _body(before, after)
    if body:
        head += [f"--- {a}", f"+++ {b}", *body]
    return "\n".join(head) + "\n", adds, dels


_COLORS = {"+": "\x1b[32m", "-": "\x1b[31m", "@": "\x1b[36m", "d": "\x1b[1m"}
_RESET = "\x1b[0m"
_LETTER = {"create": "A", "modify": "M", "delete": "D", "rename": "R"}


def combined_patch(changes: Sequence[FileChange]) -> str:
    """Every change's diff, one after the other: a patch ``git apply`` takes whole."""
    return "".join(c.diff if c.diff.endswith("\n") else c.diff + "\n" for c in changes if c.diff)


def render_changes(changes: Sequence[FileChange], *, color: bool = False, diff: bool = True) -> str:
    """A review summary for a terminal: one line per file, a total, then (optionally) the diffs.

    With ``color`` the output uses ANSI colours (pass ``stream.isatty()``); otherwise plain text.
    Control characters in paths and diff lines are escaped
    (:func:`driveros.approval.display_command`).
    """
    if not changes:
        return "No changes.\n"
    lines: list[str] = []
    for ch in changes:
        name = f"{ch.old_path} -> {ch.path}" if ch.old_path else ch.path
        name = display_command(name)
        counts = "binary" if ch.binary else f"+{ch.additions} -{ch.deletions}"
        lines.append(f" {_LETTER[ch.action]} {name} ({counts})")
    adds = sum(c.additions for c in changes)
    dels = sum(c.deletions for c in changes)
    n = len(changes)
    lines.append(f"{n} file{'s' if n != 1 else ''} changed, +{adds} -{dels}")
    if diff:
        lines.append("")
        for ch in changes:
            for raw in ch.diff.splitlines():
                # What the agent wrote is shown as it is, never as the terminal would render
                # it (an escape sequence could hide a line under review); tabs stay tabs.
                line = "\t".join(display_command(part) for part in raw.split("\t"))
                lines.append(_paint(line) if color else line)
    return "\n".join(lines) + "\n"


def _paint(line: str) -> str:
    if line.startswith(("diff --git", "--- ", "+++ ")):
        key = "d"
    elif line[:1] in ("+", "-", "@"):
        key = line[:1]
    else:
        return line
    return f"{_COLORS[key]}{line}{_RESET}"
