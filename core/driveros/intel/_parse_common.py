"""Shared parsing pieces: the parse result, path normalisation, the GNU ``file:line:col`` form.

Every parser takes the tool's stdout and stderr plus a :class:`PathContext` and returns a
:class:`ParseResult`: the typed items it understood and the lines it did not. Lines a parser
knows to be boilerplate ("Found 3 errors", "Compiling foo v0.1.0") are dropped on purpose;
anything else it cannot read goes to ``unparsed`` so the feed can keep it as raw text.

Lines and columns in every :class:`DiagnosticItem` are 1-based; 0 means "unknown"
(``driveros.diagnostics`` owns the convention and the conversion from 0-based positions).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from driveros.diagnostics import (
    ColumnUnit,
    DiagnosticItem,
    OneBasedSpan,
    Severity,
    code_point_index,
)

_SEVERITIES: dict[str, Severity] = {
    "error": "error",
    "fatal": "error",
    "fatal error": "error",
    "failure": "error",
    "warning": "warning",
    "warn": "warning",
    "note": "information",
    "info": "information",
    "information": "information",
    "help": "hint",
    "hint": "hint",
}


def severity_of(word: str | None, default: Severity = "error") -> Severity:
    """Map a tool's severity word to ours; unknown words get ``default``."""
    if not word:
        return default
    return _SEVERITIES.get(word.strip().lower(), default)


@dataclass(frozen=True)
class PathContext:
    """How to turn a tool's path into a workspace-relative one.

    ``roots`` are absolute spellings of the workspace root (as the tool inside the sandbox
    sees it, and as the host sees it); ``cwd`` is the directory the tool ran in, relative to
    the workspace root ("" for the root itself).
    """

    roots: tuple[str, ...] = ()
    cwd: str = ""

    def normalize(self, path: str) -> str:
        p = path.strip()
        if p.startswith("file://"):
            p = p[len("file://") :]
        if not p:
            return ""
        p = p.replace("\\", "/")
        if p.startswith("/"):
            norm = posixpath.normpath(p)
            for root in self.roots:
                r = posixpath.normpath(root)
                if norm == r:
                    return "."
                if norm.startswith(r.rstrip("/") + "/"):
                    return norm[len(r.rstrip("/")) + 1 :]
            return norm  # outside the workspace (a library file): keep it absolute
        joined = (
            posixpath.normpath(posixpath.join(self.cwd, p)) if self.cwd else posixpath.normpath(p)
        )
        return "." if joined in ("", ".") else joined


@dataclass
class ParseResult:
    items: list[DiagnosticItem] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)

    def keep(self, line: str) -> None:
        """Keep a line the parser could not read (blank lines are not worth keeping)."""
        if line.strip():
            self.unparsed.append(line.rstrip())


def to_int(value: object, default: int = 0) -> int:
    """A tolerant int: tools sometimes emit null, strings or floats for positions."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return default
    return default


#: Where an item with no position is: nowhere known (line and column 0).
UNKNOWN_SPAN = OneBasedSpan()


def make_item(
    *,
    path: str,
    span: OneBasedSpan = UNKNOWN_SPAN,
    severity: Severity = "error",
    code: str | None = None,
    source: str,
    message: str,
) -> DiagnosticItem:
    """Build an item with sane positions (never negative, end never before start)."""
    line = max(span.line, 0)
    column = max(span.column, 0)
    end_line, end_column = span.end_line, span.end_column
    if end_line is not None and end_line < line:
        end_line = None
        end_column = None
    return DiagnosticItem(
        path=path,
        line=line,
        column=column,
        end_line=end_line,
        end_column=end_column,
        severity=severity,
        code=code or None,
        source=source,
        message=message.strip() or "(no message)",
    )


# path:line[:col]: [severity[:]] message [code]   (gcc, go, mypy text, flake8, shellcheck gcc)
# Matched on a stripped line, so the message runs to its end: a lazy message before a
# trailing ``\s*`` rescanned every whitespace run of a hostile line (quadratic).
_GNU = re.compile(
    r"^(?P<path>[^\s:][^:]*?):(?P<line>\d+)(?::(?P<col>\d+))?:\s*"
    r"(?:(?P<sev>error|warning|note|info|hint|fatal error)\s*:\s*)?(?P<msg>.+)$",
    re.IGNORECASE,
)
# Only from the start of a whitespace run: searching from inside each run is quadratic.
_TRAILING_CODE = re.compile(r"(?<!\s)\s+\[(?P<code>[A-Za-z0-9_.\-]+)\]$")


def parse_gnu_line(
    line: str, ctx: PathContext, *, source: str, default: Severity = "error"
) -> DiagnosticItem | None:
    """Parse one ``path:line[:col]: [severity:] message [code]`` line, or return None."""
    m = _GNU.match(line.strip())
    if m is None:
        return None
    msg = m.group("msg")
    code: str | None = None
    cm = _TRAILING_CODE.search(msg)
    if cm is not None:
        code = cm.group("code")
        msg = msg[: cm.start()]
    return make_item(
        path=ctx.normalize(m.group("path")),
        span=OneBasedSpan(line=int(m.group("line")), column=int(m.group("col") or 0)),
        severity=severity_of(m.group("sev"), default),
        code=code,
        source=source,
        message=msg,
    )


def parse_gnu(stdout: str, stderr: str, ctx: PathContext, *, source: str) -> ParseResult:
    """The generic parser for any tool speaking the GNU ``file:line:col: message`` form."""
    result = ParseResult()
    for line in lines_of(stdout, stderr):
        item = parse_gnu_line(line, ctx, source=source)
        if item is None:
            result.keep(line)
        else:
            result.items.append(item)
    return result


def parse_raw(stdout: str, stderr: str, ctx: PathContext, *, source: str) -> ParseResult:
    """No structure assumed: every non-blank line is kept as raw text."""
    del ctx, source
    result = ParseResult()
    for line in lines_of(stdout, stderr):
        result.keep(line)
    return result


def lines_of(*streams: str) -> Iterable[str]:
    for stream in streams:
        yield from stream.splitlines()


def columns_in_code_points(
    item: DiagnosticItem, lines: list[str] | None, unit: ColumnUnit
) -> DiagnosticItem:
    """``item`` with its columns, counted by the tool in ``unit``, counted in code points on
    the file's ``lines`` (unchanged when the text is unknown or the line is not there)."""

    def convert(line_no: int, column: int) -> int:
        if column <= 1 or lines is None or not 1 <= line_no <= len(lines):
            return column
        return code_point_index(lines[line_no - 1].rstrip("\r"), column - 1, unit) + 1

    column = convert(item.line, item.column)
    end_column = item.end_column
    if end_column is not None:
        end_column = convert(item.end_line or item.line, end_column)
    if (column, end_column) == (item.column, item.end_column):
        return item
    return item.model_copy(update={"column": column, "end_column": end_column})
