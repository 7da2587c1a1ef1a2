"""Parsers for the Python checks: ruff JSON, mypy (JSON lines or text), pyright JSON,
``python -m compileall`` and pytest (collection errors, failures with ``--tb=line``)."""

from __future__ import annotations

import json
import re
from typing import Any

from driveros.diagnostics import OneBasedSpan, to_one_based
from driveros.intel._parse_common import (
    ParseResult,
    PathContext,
    lines_of,
    make_item,
    parse_gnu_line,
    severity_of,
    to_int,
)

# Ruff has no severities; these codes are real errors (syntax, undefined names, misplaced
# return/yield/break), everything else is a warning.
_RUFF_ERRORS = frozenset(
    {"invalid-syntax", "E999", "F821", "F822", "F823", "F701", "F702", "F704", "F706"}
)


def _json_block(text: str, opener: str) -> Any:
    """The JSON value in ``text``, tolerating garbage before and after it."""
    stripped = text.strip()
    if not stripped:
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    start = stripped.find(opener)
    closer = "]" if opener == "[" else "}"
    end = stripped.rfind(closer)
    if start < 0 or end <= start:
        return None
    try:
        return json.loads(stripped[start : end + 1])
    except ValueError:
        return None


def _outside_block(text: str, opener: str) -> list[str]:
    """Lines of ``text`` before the JSON block's first line and after its last one."""
    lines = text.splitlines()
    closer = "]" if opener == "[" else "}"
    first = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith(opener)), None)
    last = next(
        (i for i in range(len(lines) - 1, -1, -1) if lines[i].rstrip().endswith(closer)), None
    )
    if first is None or last is None:
        return lines
    return lines[:first] + lines[last + 1 :]


def _json_document(stdout: str, stderr: str, opener: str, result: ParseResult) -> Any:
    """The JSON array (``opener`` ``[``) or object (``{``) in ``stdout``, the lines around it
    kept in ``result``; None when there is none, and then every line of both streams is kept.
    """
    data = _json_block(stdout, opener)
    if not isinstance(data, list if opener == "[" else dict):
        for line in lines_of(stdout, stderr):
            result.keep(line)
        return None
    for line in _outside_block(stdout, opener):
        result.keep(line)
    return data


def parse_ruff(stdout: str, stderr: str, ctx: PathContext, *, source: str = "ruff") -> ParseResult:
    result = ParseResult()
    data = _json_document(stdout, stderr, "[", result)
    if data is None:
        return result
    for entry in data:
        if not isinstance(entry, dict):
            result.keep(json.dumps(entry))
            continue
        loc = entry.get("location") or {}
        end = entry.get("end_location") or {}
        code = entry.get("code") or None
        message = str(entry.get("message") or "")
        fatal = code is None or code in _RUFF_ERRORS or message.startswith("SyntaxError")
        severity = severity_of("error" if fatal else "warning")
        result.items.append(
            make_item(
                path=ctx.normalize(str(entry.get("filename") or "")),
                span=OneBasedSpan(
                    line=to_int(loc.get("row")),
                    column=to_int(loc.get("column")),
                    end_line=to_int(end.get("row")) or None,
                    end_column=to_int(end.get("column")) or None,
                ),
                severity=severity,
                code=str(code) if code else None,
                source=source,
                message=message,
            )
        )
    for line in lines_of(stderr):
        result.keep(line)
    return result


_MYPY_BOILERPLATE = re.compile(
    r"^(Found \d+ errors? in \d+ files?|Success: no issues found|"
    r"\d+ errors? (prevented|found))",
)


def parse_mypy(stdout: str, stderr: str, ctx: PathContext, *, source: str = "mypy") -> ParseResult:
    """mypy ``-O json`` lines (0-based columns) or the classic text form, mixed freely."""
    result = ParseResult()
    for line in lines_of(stdout, stderr):
        text = line.strip()
        if not text or _MYPY_BOILERPLATE.match(text):
            continue
        if text.startswith("{"):
            try:
                entry = json.loads(text)
            except ValueError:
                entry = None
            if isinstance(entry, dict) and "message" in entry:
                message = str(entry.get("message") or "")
                hint = entry.get("hint")
                if hint:
                    message = f"{message}\n{hint}"
                column = to_int(entry.get("column"), -1)
                end_column = to_int(entry.get("end_column"), -1)
                result.items.append(
                    make_item(
                        path=ctx.normalize(str(entry.get("file") or "")),
                        span=OneBasedSpan(
                            line=to_int(entry.get("line")),
                            column=column + 1 if column >= 0 else 0,
                            end_line=to_int(entry.get("end_line")) or None,
                            end_column=end_column + 1 if end_column >= 0 else None,
                        ),
                        severity=severity_of(str(entry.get("severity") or ""), "error"),
                        code=str(entry["code"]) if entry.get("code") else None,
                        source=source,
                        message=message,
                    )
                )
                continue
        item = parse_gnu_line(text, ctx, source=source)
        if item is None:
            result.keep(line)
        else:
            result.items.append(item)
    return result


def parse_pyright(
    stdout: str, stderr: str, ctx: PathContext, *, source: str = "pyright"
) -> ParseResult:
    result = ParseResult()
    data = _json_document(stdout, stderr, "{", result)
    if data is None:
        return result
    diagnostics = data.get("generalDiagnostics")
    if not isinstance(diagnostics, list):
        diagnostics = []
        if data.get("summary") is None:
            result.keep(json.dumps(data)[:2000])
    for entry in diagnostics:
        if not isinstance(entry, dict):
            result.keep(json.dumps(entry))
            continue
        rng = entry.get("range") or {}
        start = rng.get("start") or {}
        end = rng.get("end") or {}
        # pyright speaks LSP: 0-based positions
        span = to_one_based(
            to_int(start.get("line")) if "line" in start else -1,
            to_int(start.get("character")),
            to_int(end.get("line")) if "line" in end else None,
            to_int(end.get("character")),
        )
        result.items.append(
            make_item(
                path=ctx.normalize(str(entry.get("file") or "")),
                span=span,
                severity=severity_of(str(entry.get("severity") or ""), "error"),
                code=str(entry["rule"]) if entry.get("rule") else None,
                source=source,
                message=str(entry.get("message") or ""),
            )
        )
    for line in lines_of(stderr):
        result.keep(line)
    return result


_COMPILE_HEADER = re.compile(r"^\*\*\* Error compiling '(?P<path>.+)'\.\.\.$")
_COMPILE_FILE = re.compile(r'^\s*File "(?P<path>.+)", line (?P<line>\d+)')
_COMPILE_ERROR = re.compile(r"^(?P<kind>[A-Za-z_]*(Error|Warning)):\s*(?P<msg>.*)$")
_COMPILE_NOISE = re.compile(r"^(Listing|Compiling|Can't list) '")


def parse_compileall(
    stdout: str, stderr: str, ctx: PathContext, *, source: str = "compileall"
) -> ParseResult:
    """``*** Error compiling 'x.py'...`` blocks ending in ``SyntaxError: ...``."""
    result = ParseResult()
    lines = list(lines_of(stdout, stderr))
    i = 0
    while i < len(lines):
        header = _COMPILE_HEADER.match(lines[i].strip())
        if header is None:
            if not _COMPILE_NOISE.match(lines[i].strip()):
                result.keep(lines[i])
            i += 1
            continue
        path = header.group("path")
        line_no = column = 0
        message = ""
        i += 1
        while i < len(lines) and not _COMPILE_HEADER.match(lines[i].strip()):
            text = lines[i]
            fm = _COMPILE_FILE.match(text)
            if fm is not None:
                path, line_no = fm.group("path"), int(fm.group("line"))
            elif text.strip() and set(text.strip()) <= {"^", "~"}:
                # the caret sits under the source line, which Python indents by 4
                column = max(len(text) - len(text.lstrip()) - 4, 0) + 1
            em = _COMPILE_ERROR.match(text.strip())
            if em is not None:
                message = f"{em.group('kind')}: {em.group('msg')}"
                i += 1
                break
            i += 1
        result.items.append(
            make_item(
                path=ctx.normalize(path),
                span=OneBasedSpan(line=line_no, column=column if line_no else 0),
                severity="error",
                code=message.split(":", 1)[0] if message else None,
                source=source,
                message=message or "could not compile",
            )
        )
    return result


_STREAM_BREAK = "\x00--stderr--\x00"
_PYTEST_SECTION = re.compile(r"^={3,} (?P<title>.+?) ={3,}$")
_PYTEST_COLLECT = re.compile(r"^_{3,} ERROR collecting (?P<path>.+?) _{3,}$")
_PYTEST_RULE = re.compile(r"^_{3,} .+ _{3,}$")
_PYTEST_SUMMARY = re.compile(r"^(?P<kind>FAILED|ERROR) (?P<node>\S+)(?: - (?P<msg>.*))?$")
_PYTEST_LOCATION = re.compile(r"^(?P<path>[^\s:][^:]*\.py):(?P<line>\d+): (?P<msg>.*)$")
_PYTEST_NOISE = re.compile(
    r"^(\d+ (tests?|passed|failed|errors?|skipped|deselected)\b.*|no tests ran.*|"
    r"!{3,} .* !{3,}|[.FEsxX]+\s*(\[\s*\d+%\])?|\S+\.py::\S+|<\S+ .*>|"
    r"(collected|collecting) .*|={3,}.*={3,}|Hint: .*|Traceback:|"
    r"ImportError while importing test module .*)$"
)


def parse_pytest(
    stdout: str, stderr: str, ctx: PathContext, *, source: str = "pytest"
) -> ParseResult:
    """Collection errors (``pytest --co``) and failures (``-rfE --tb=line``)."""
    result = ParseResult()
    section = ""
    collect_path: str | None = None
    collect_line = 0
    collect_msg: list[str] = []
    tb_lines: list[tuple[str, int, str]] = []

    def flush_collect() -> None:
        nonlocal collect_path
        if collect_path is None:
            return
        message = collect_msg[-1] if collect_msg else "error collecting test module"
        result.items.append(
            make_item(
                path=ctx.normalize(collect_path),
                span=OneBasedSpan(line=collect_line),
                severity="error",
                code="collection-error",
                source=source,
                message=message,
            )
        )
        collect_path = None

    for raw in [*lines_of(stdout), _STREAM_BREAK, *lines_of(stderr)]:
        line = raw.rstrip()
        if raw is _STREAM_BREAK:
            flush_collect()
            section = ""  # stderr never continues a stdout section
            continue
        sm = _PYTEST_SECTION.match(line)
        if sm is not None:
            flush_collect()
            section = sm.group("title").lower()
            continue
        cm = _PYTEST_COLLECT.match(line)
        if cm is not None:
            flush_collect()
            collect_path, collect_line, collect_msg[:] = cm.group("path"), 0, []
            continue
        if collect_path is not None:
            if _PYTEST_RULE.match(line):
                flush_collect()
            else:
                lm = _PYTEST_LOCATION.match(line.strip())
                if lm is not None and ctx.normalize(lm.group("path")) == ctx.normalize(
                    collect_path
                ):
                    collect_line = int(lm.group("line"))
                elif line.startswith("E "):
                    collect_msg.append(line[1:].strip())
                continue
        summary = _PYTEST_SUMMARY.match(line)
        if summary is not None and section.startswith("short test summary"):
            node = summary.group("node")
            path = node.split("::", 1)[0]
            norm = ctx.normalize(path)
            if summary.group("kind") == "ERROR" and "::" not in node:
                continue  # the collection error itself was reported from its section
            line_no = 0
            for i, (tb_path, tb_line, _msg) in enumerate(tb_lines):
                if tb_path == norm:
                    line_no = tb_line
                    del tb_lines[i]
                    break
            kind = "test-failure" if summary.group("kind") == "FAILED" else "test-error"
            detail = summary.group("msg") or ""
            result.items.append(
                make_item(
                    path=norm,
                    span=OneBasedSpan(line=line_no),
                    severity="error",
                    code=kind,
                    source=source,
                    message=f"{node}: {detail}" if detail else f"{node} {kind.split('-')[1]}",
                )
            )
            continue
        if section in ("failures", "errors"):
            lm = _PYTEST_LOCATION.match(line.strip())
            if lm is not None:
                tb_lines.append((ctx.normalize(lm.group("path")), int(lm.group("line")), ""))
            continue  # traceback text belongs to the failure reported in the summary
        if _PYTEST_NOISE.match(line.strip()):
            continue
        result.keep(line)
    flush_collect()
    return result
