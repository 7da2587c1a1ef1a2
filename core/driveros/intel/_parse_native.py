"""Parsers for the non-Python checks: tsc, eslint JSON, go build/vet and cargo JSON."""

from __future__ import annotations

import json
import re
from typing import Any

from driveros.diagnostics import OneBasedSpan
from driveros.intel._parse_common import (
    ParseResult,
    PathContext,
    lines_of,
    make_item,
    parse_gnu_line,
    severity_of,
    to_int,
)

# src/a.ts(1,7): error TS2322: Type 'string' is not assignable to type 'number'.
_TSC = re.compile(
    r"^(?P<path>.+?)\((?P<line>\d+),(?P<col>\d+)\):\s*(?P<sev>error|warning|message)\s+"
    r"(?P<code>TS\d+)\s*:\s*(?P<msg>.*)$"
)
# error TS5083: Cannot read file '/x/tsconfig.json'.
_TSC_GLOBAL = re.compile(r"^(?P<sev>error|warning)\s+(?P<code>TS\d+)\s*:\s*(?P<msg>.*)$")
_TSC_NOISE = re.compile(r"^(Found \d+ errors?.*|Version \d+\.\d+.*|\s*\d+\s+.*)$")


def parse_tsc(stdout: str, stderr: str, ctx: PathContext, *, source: str = "tsc") -> ParseResult:
    """``tsc --pretty false``: one line per diagnostic, indented continuation lines."""
    result = ParseResult()
    for line in lines_of(stdout, stderr):
        stripped = line.strip()
        m = _TSC.match(stripped)
        g = None if m is not None else _TSC_GLOBAL.match(stripped)
        if m is not None:
            result.items.append(
                make_item(
                    path=ctx.normalize(m.group("path")),
                    span=OneBasedSpan(line=int(m.group("line")), column=int(m.group("col"))),
                    severity=severity_of(m.group("sev").replace("message", "info")),
                    code=m.group("code"),
                    source=source,
                    message=m.group("msg"),
                )
            )
        elif g is not None:
            result.items.append(
                make_item(
                    path=".",
                    severity=severity_of(g.group("sev")),
                    code=g.group("code"),
                    source=source,
                    message=g.group("msg"),
                )
            )
        elif line.startswith((" ", "\t")) and result.items and stripped:
            last = result.items[-1]
            result.items[-1] = last.model_copy(update={"message": f"{last.message}\n{stripped}"})
        elif stripped and not _TSC_NOISE.match(stripped):
            result.keep(line)
    return result


def parse_eslint(
    stdout: str, stderr: str, ctx: PathContext, *, source: str = "eslint"
) -> ParseResult:
    """``eslint -f json``: an array of files, each with its messages (severity 1 or 2)."""
    result = ParseResult()
    text = stdout.strip()
    start, end = text.find("["), text.rfind("]")
    data: Any = None
    if start >= 0 and end > start:
        try:
            data = json.loads(text[start : end + 1])
        except ValueError:
            data = None
    if not isinstance(data, list):
        for line in lines_of(stdout, stderr):
            result.keep(line)
        return result
    if text[:start].strip():
        result.keep(text[:start])
    if text[end + 1 :].strip():
        result.keep(text[end + 1 :])
    for entry in data:
        if not isinstance(entry, dict):
            continue
        path = ctx.normalize(str(entry.get("filePath") or ""))
        for msg in entry.get("messages") or []:
            if not isinstance(msg, dict):
                continue
            level = to_int(msg.get("severity"), 2)
            result.items.append(
                make_item(
                    path=path,
                    span=OneBasedSpan(
                        line=to_int(msg.get("line")),
                        column=to_int(msg.get("column")),
                        end_line=to_int(msg.get("endLine")) or None,
                        end_column=to_int(msg.get("endColumn")) or None,
                    ),
                    severity="error" if level >= 2 or msg.get("fatal") else "warning",
                    code=str(msg["ruleId"]) if msg.get("ruleId") else None,
                    source=source,
                    message=str(msg.get("message") or ""),
                )
            )
    for line in lines_of(stderr):
        result.keep(line)
    return result


_GO_NOISE = re.compile(
    r"^(# \S+|go: (downloading|finding|extracting) .*|\(exit status \d+\)|"
    r"note: module requires Go .*)$"
)


def parse_go(stdout: str, stderr: str, ctx: PathContext, *, source: str = "go") -> ParseResult:
    """``go build`` / ``go vet``: ``./file.go:line:col: message`` (vet may prefix ``vet: ``)."""
    result = ParseResult()
    for line in lines_of(stdout, stderr):
        stripped = line.strip()
        if not stripped or _GO_NOISE.match(stripped):
            continue
        if stripped.startswith("vet: "):
            stripped = stripped[len("vet: ") :]
        item = parse_gnu_line(stripped, ctx, source=source)
        if item is not None and item.path.endswith(".go"):
            result.items.append(item)
        elif line.startswith("\t") and result.items:
            # go indents the continuation of a multi-line message with a tab
            last = result.items[-1]
            result.items[-1] = last.model_copy(update={"message": f"{last.message}\n{stripped}"})
        else:
            result.keep(line)
    return result


_CARGO_NOISE = re.compile(
    r"^(Compiling|Checking|Finished|Blocking|Updating|Downloading|Downloaded|Locking|"
    r"Adding|Fresh|Running|Documenting|warning: build failed, waiting for other jobs|"
    r"error: could not compile) "
)
_CARGO_SKIP = re.compile(
    r"^(aborting due to|\d+ warnings? emitted|Some errors have detailed|For more information about)"
)


def parse_cargo(
    stdout: str, stderr: str, ctx: PathContext, *, source: str = "cargo"
) -> ParseResult:
    """``cargo check --message-format=json``: one JSON object per stdout line."""
    result = ParseResult()
    for line in lines_of(stdout):
        stripped = line.strip()
        if not stripped:
            continue
        try:
            entry = json.loads(stripped)
        except ValueError:
            result.keep(line)
            continue
        if not isinstance(entry, dict):
            result.keep(line)
            continue
        if entry.get("reason") != "compiler-message":
            continue  # artifacts, build scripts, build-finished: progress, not diagnostics
        message = entry.get("message")
        if not isinstance(message, dict):
            continue
        _cargo_item(message, ctx, source, result)
    # --all-targets checks a crate once per target: the same diagnostic comes back per target
    result.items = list(dict.fromkeys(result.items))
    for line in lines_of(stderr):
        stripped = line.strip()
        if stripped and not _CARGO_NOISE.match(stripped):
            result.keep(line)
    return result


def _cargo_item(message: dict[str, Any], ctx: PathContext, source: str, out: ParseResult) -> None:
    text = str(message.get("message") or "")
    if _CARGO_SKIP.match(text):
        return
    code_obj = message.get("code")
    code = (
        str(code_obj.get("code")) if isinstance(code_obj, dict) and code_obj.get("code") else None
    )
    spans = [s for s in message.get("spans") or [] if isinstance(s, dict)]
    primary = next((s for s in spans if s.get("is_primary")), spans[0] if spans else None)
    level = str(message.get("level") or "error")
    # "error" also covers "error: internal compiler error"
    severity = severity_of("error" if level.startswith("error") else level, "warning")
    if primary is None:
        out.items.append(
            make_item(path=".", severity=severity, code=code, source=source, message=text)
        )
        return
    label = primary.get("label")
    out.items.append(
        make_item(
            path=ctx.normalize(str(primary.get("file_name") or "")),
            span=OneBasedSpan(
                line=to_int(primary.get("line_start")),
                column=to_int(primary.get("column_start")),
                end_line=to_int(primary.get("line_end")) or None,
                end_column=to_int(primary.get("column_end")) or None,
            ),
            severity=severity,
            code=code,
            source=source,
            message=f"{text}: {label}" if label and label not in text else text,
        )
    )
