"""Parsers for the checks a project declares: unittest, ``go test -json``, TAP (tape,
node:test), flake8, stubtest and the formatters' ``--check`` ("would reformat").

A failing test becomes a ``test-failure`` (``test-error`` for an error outside an
assertion) at its assertion line: the deepest traceback frame in a workspace file, else the
test's own location. Its message starts with the test id (``tests/test_x.py::Class::test``,
``pkg/x_test.go::TestX``), the identity of a failing test (driveros.diagnostics)."""

from __future__ import annotations

import json
import posixpath
import re

from driveros.diagnostics import OneBasedSpan
from driveros.intel._parse_common import (
    ParseResult,
    PathContext,
    lines_of,
    make_item,
    parse_gnu_line,
)

_RULE = re.compile(r"^(=|-){20,}$")
_UNITTEST_HEAD = re.compile(
    r"^(?P<kind>FAIL|ERROR|UNEXPECTED SUCCESS): (?P<name>\S+) \((?P<id>[^)]+)\)"
)
_PROGRESS = re.compile(r"^[.sxFEu]+(?=/|$)")
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?$')
_UNITTEST_NOISE = re.compile(
    r"^(Ran \d+ tests? in .*|OK( \(.*\))?|FAILED \(.*\)|[.sxFEu]+|Traceback \(most recent call "
    r"last\):|.* \.\.\. (ok|FAIL|ERROR|skipped.*|expected failure|unexpected success))$"
)


def _inside(ctx: PathContext, path: str) -> str | None:
    norm = ctx.normalize(path)
    return None if norm.startswith("/") or not norm else norm


def _unittest_item(
    kind: str, dotted: str, block: list[str], ctx: PathContext, source: str
) -> tuple[str, int, str, str]:
    """(path, line, message, code) of one FAIL/ERROR block."""
    frames = [m for m in (_FRAME.match(ln) for ln in block) if m is not None]
    parts = dotted.split(".")
    module_path = "/".join(parts[:-2]) + ".py" if len(parts) >= 3 else ""
    path, line = "", 0
    test_name = parts[-1]
    # the assertion line: the deepest frame inside the test's own function, else the deepest
    # frame in the workspace
    for m in reversed(frames):
        inside = _inside(ctx, m.group("path"))
        if inside is not None and (m.group("func") or "") == test_name:
            path, line = inside, int(m.group("line"))
            break
    if not path:
        for m in reversed(frames):
            inside = _inside(ctx, m.group("path"))
            if inside is not None:
                path, line = inside, int(m.group("line"))
                break
    if not path:
        path = ctx.normalize(module_path) if module_path else "."
    last = next((ln.strip() for ln in reversed(block) if ln.strip()), "")
    test_file = ctx.normalize(module_path) if module_path else path
    test_id = "::".join([test_file, *parts[-2:]]) if len(parts) >= 3 else dotted
    is_assertion = last.startswith("AssertionError") or kind == "FAIL"
    code = "test-failure" if is_assertion else "test-error"
    return path, line, f"{test_id}: {last}" if last else test_id, code


def parse_unittest(
    stdout: str, stderr: str, ctx: PathContext, *, source: str = "unittest"
) -> ParseResult:
    """``python -m unittest`` failures: ``FAIL: test (mod.Class.test)`` blocks."""
    result = ParseResult()
    lines = list(lines_of(stdout, stderr))
    i = 0
    while i < len(lines):
        head = _UNITTEST_HEAD.match(lines[i].strip())
        if head is None:
            # progress dots run into whatever the tests print: keep only what they print
            text = _PROGRESS.sub("", lines[i].strip())
            if text and not _RULE.match(text) and not _UNITTEST_NOISE.match(text):
                result.keep(text)
            i += 1
            continue
        block: list[str] = []
        i += 1
        while i < len(lines) and not _UNITTEST_HEAD.match(lines[i].strip()):
            text = lines[i].strip()
            if text.startswith("=" * 20) or re.match(r"^Ran \d+ tests? in ", text):
                break
            block.append(lines[i])
            i += 1
        while block and (not block[-1].strip() or _RULE.match(block[-1].strip())):
            block.pop()
        dotted, name = head.group("id"), head.group("name")
        if name not in ("setUpClass", "tearDownClass", "setUpModule", "tearDownModule") and (
            dotted.rsplit(".", 1)[-1] != name
        ):
            dotted = f"{dotted}.{name}"  # Python before 3.11: "test_x (pkg.mod.Class)"
        path, line, message, code = _unittest_item(head.group("kind"), dotted, block, ctx, source)
        result.items.append(
            make_item(
                path=path,
                span=OneBasedSpan(line=line),
                severity="error",
                code=code,
                source=source,
                message=message,
            )
        )
    return result


def parse_gotest(stdout: str, stderr: str, ctx: PathContext, *, source: str = "go") -> ParseResult:
    """``go list -m`` (``module PATH``) then ``go test -json`` events: each failing test at
    the ``file_test.go:LINE:`` its output names (the package's directory under the module)."""
    result = ParseResult()
    module = ""
    output: dict[tuple[str, str], list[str]] = {}
    failed: list[tuple[str, str]] = []
    for raw in lines_of(stdout, stderr):
        text = raw.strip()
        if text.startswith("module "):
            module = text.split(None, 1)[1]
            continue
        try:
            event = json.loads(text) if text.startswith("{") else None
        except ValueError:
            event = None
        if not isinstance(event, dict):
            gnu = parse_gnu_line(text, ctx, source=source)  # a build error
            if gnu is not None:
                result.items.append(gnu)
            elif text and not re.match(r"^(ok|FAIL|\?)\s", text) and text != "FAIL":
                result.keep(raw)
            continue
        pkg, test = str(event.get("Package") or ""), str(event.get("Test") or "")
        if event.get("Action") == "output":
            output.setdefault((pkg, test), []).append(str(event.get("Output") or ""))
        elif event.get("Action") == "fail" and test and "/" not in test:
            failed.append((pkg, test))
        elif event.get("Action") == "fail" and not test and (pkg, "") in output:
            for out in output[(pkg, "")]:
                gnu = parse_gnu_line(out.strip(), ctx, source=source)
                if gnu is not None:
                    result.items.append(gnu)
    for pkg, test in failed:
        rel = pkg[len(module) :].lstrip("/") if module and pkg.startswith(module) else ""
        path, line, message = (rel or "."), 0, f"{test} failed"
        for out in output.get((pkg, test), []):
            m = re.match(r"^\s*(?P<file>[\w.\-]+\.go):(?P<line>\d+): (?P<msg>.*)$", out.rstrip())
            if m is not None:
                path = ctx.normalize(
                    posixpath.join(rel, m.group("file")) if rel else m.group("file")
                )
                line, message = int(m.group("line")), m.group("msg").strip()
                break
        test_file = path if path.endswith(".go") else rel or "."
        result.items.append(
            make_item(
                path=path,
                span=OneBasedSpan(line=line),
                severity="error",
                code="test-failure",
                source=source,
                message=f"{test_file}::{test}: {message}",
            )
        )
    return result


_TAP_RESULT = re.compile(r"^(?P<indent>\s*)(?P<ok>not ok|ok) \d+(?: - )?\s*(?P<name>.*?)(\s+#.*)?$")
_TAP_AT = re.compile(r"(?:at:|location:|\()\s*'?(?:file://)?(?P<path>/[^\s:()']+):(?P<line>\d+)")


def parse_tap(stdout: str, stderr: str, ctx: PathContext, *, source: str = "tap") -> ParseResult:
    """TAP (tape, node:test ``--test-reporter=tap``): each ``not ok`` at the first workspace
    frame of its YAML block (``at:``, ``location:`` or the stack), named by the enclosing
    ``# test`` comment and the assertion's name."""
    result = ParseResult()
    lines = list(lines_of(stdout, stderr))
    heading = ""
    i = 0
    while i < len(lines):
        text = lines[i].rstrip()
        if text.startswith("# ") and not re.match(
            r"^# (tests|pass|fail|ok|suites|cancelled|skipped|todo|duration_ms) ?", text
        ):
            heading = text[2:].strip()
        m = _TAP_RESULT.match(text)
        i += 1
        if m is None or m.group("ok") == "ok":
            continue
        block: list[str] = []
        while (
            i < len(lines)
            and not _TAP_RESULT.match(lines[i].rstrip())
            and not (lines[i].startswith("# "))
        ):
            block.append(lines[i])
            i += 1
        if any(
            re.match(r"^\s*(failureType: 'subtestsFailed'|error: '\d+ subtests? failed')", b)
            for b in block
        ):
            continue  # node:test's parent of a failing subtest: the subtest is reported
        path, line = ".", 0
        for b in block:
            for at in _TAP_AT.finditer(b):
                inside = _inside(ctx, at.group("path"))
                if inside is not None and "node_modules/" not in inside:
                    path, line = inside, int(at.group("line"))
                    break
            if line:
                break
        name = m.group("name").strip()
        detail = _tap_detail(block)
        test_id = f"{path}::{heading}::{name}" if heading and heading != name else f"{path}::{name}"
        result.items.append(
            make_item(
                path=path,
                span=OneBasedSpan(line=line),
                severity="error",
                code="test-failure",
                source=source,
                message=f"{test_id}: {detail}" if detail else test_id,
            )
        )
    return result


def _tap_field(block: list[str], key: str) -> str:
    """A YAML field's value from a TAP block: inline, or the first line of its ``|-`` text."""
    for n, line in enumerate(block):
        m = re.match(rf"^\s*{key}:\s*(.*)$", line)
        if m is None:
            continue
        value = m.group(1).strip()
        if value in ("|-", "|", ">-", ">") and n + 1 < len(block):
            value = block[n + 1].strip()
        return value.strip("'")
    return ""


def _tap_detail(block: list[str]) -> str:
    expected, actual = _tap_field(block, "expected"), _tap_field(block, "actual")
    if expected or actual:
        return f"expected {expected}, actual {actual}"
    return _tap_field(block, "error") or _tap_field(block, "message")


_JS_FRAME = re.compile(r"\(?(?:file://)?(?P<path>/[^\s:()]+):(?P<line>\d+):\d+\)?")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_jest(stdout: str, stderr: str, ctx: PathContext, *, source: str = "jest") -> ParseResult:
    """``jest --json --testLocationInResults`` (stdout; stderr is the human report): each
    failed test at the first frame of its failure in its own file, else its location."""
    result = ParseResult()
    data = None
    text = stdout.strip()
    start = text.find("{")
    if start >= 0:
        try:
            data = json.loads(text[start:])
        except ValueError:
            data = None
    if not isinstance(data, dict):
        for raw in lines_of(stdout, stderr):
            result.keep(raw)
        return result
    for suite in data.get("testResults") or []:
        if not isinstance(suite, dict):
            continue
        path = ctx.normalize(str(suite.get("name") or "")) or "."
        failed = [
            a
            for a in suite.get("assertionResults") or []
            if isinstance(a, dict) and a.get("status") == "failed"
        ]
        if not failed and suite.get("status") == "failed":
            message = _ANSI.sub("", str(suite.get("message") or "")).strip()
            first = next((ln.strip() for ln in message.splitlines() if ln.strip()), "failed")
            result.items.append(
                make_item(
                    path=path,
                    severity="error",
                    code="test-error",
                    source=source,
                    message=f"{path}: {first}",
                )
            )
        for test in failed:
            name = " > ".join([*map(str, test.get("ancestorTitles") or []), str(test.get("title"))])
            messages = [_ANSI.sub("", str(m)) for m in test.get("failureMessages") or []]
            line = 0
            for frame in _JS_FRAME.finditer("\n".join(messages)):
                if ctx.normalize(frame.group("path")) == path:
                    line = int(frame.group("line"))
                    break
            location = test.get("location")
            if not line and isinstance(location, dict):
                line = int(location.get("line") or 0)
            detail = " ".join(
                ln.strip()
                for ln in (messages[0].splitlines() if messages else [])[:4]
                if ln.strip() and not ln.strip().startswith("at ")
            )
            result.items.append(
                make_item(
                    path=path,
                    span=OneBasedSpan(line=line),
                    severity="error",
                    code="test-failure",
                    source=source,
                    message=f"{path}::{name}: {detail}" if detail else f"{path}::{name}",
                )
            )
    return result


_FLAKE8 = re.compile(
    r"^(?P<path>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) (?P<msg>.*)$"
)
#: flake8 codes that are errors (syntax, undefined names); the rest are style warnings.
_FLAKE8_ERRORS = re.compile(r"^(E9\d\d|F63\d|F7\d\d|F82\d)$")


def parse_flake8(
    stdout: str, stderr: str, ctx: PathContext, *, source: str = "flake8"
) -> ParseResult:
    result = ParseResult()
    for raw in lines_of(stdout, stderr):
        m = _FLAKE8.match(raw.strip())
        if m is None:
            if raw.strip():
                result.keep(raw)
            continue
        code = m.group("code")
        result.items.append(
            make_item(
                path=ctx.normalize(m.group("path")),
                span=OneBasedSpan(line=int(m.group("line")), column=int(m.group("col"))),
                severity="error" if _FLAKE8_ERRORS.match(code) else "warning",
                code=code,
                source=source,
                message=m.group("msg"),
            )
        )
    return result


# Matched on a stripped line: the path runs to its end (a lazy one before ``\s*$`` rescanned
# every whitespace run of a hostile line).
_REFORMAT = re.compile(r"^(?:would reformat:?|\[warn\])\s+(?P<path>\S.*)$", re.IGNORECASE)
_REFORMAT_NOISE = re.compile(
    r"^(All done!.*|Oh no!.*|\d+ files? (would be|left).*|Checking formatting\.\.\.|"
    r"\[warn\] Code style issues.*|All matched files use Prettier code style!)$"
)


def parse_reformat(
    stdout: str, stderr: str, ctx: PathContext, *, source: str = "black"
) -> ParseResult:
    """``black --check`` / ``prettier --check`` / ``ruff format --check``: one warning per
    file the formatter would change (never an error: formatting is not a failure to fix)."""
    result = ParseResult()
    for raw in lines_of(stdout, stderr):
        text = raw.strip()
        m = _REFORMAT.match(text)
        if m is not None and not text.startswith("[warn] Code style"):
            result.items.append(
                make_item(
                    path=ctx.normalize(m.group("path")),
                    severity="warning",
                    code="would-reformat",
                    source=source,
                    message="would reformat",
                )
            )
        elif text and not _REFORMAT_NOISE.match(text):
            result.keep(raw)
    return result


_STUBTEST_ERROR = re.compile(r"^error: (?P<name>\S+) (?P<msg>.*)$")
_STUBTEST_AT = re.compile(r"^(Stub|Runtime): in file (?P<path>\S+?):(?P<line>\d+)")


def parse_stubtest(
    stdout: str, stderr: str, ctx: PathContext, *, source: str = "stubtest"
) -> ParseResult:
    """``stubtest`` blocks: ``error: NAME MESSAGE`` then ``Stub: in file PATH:LINE``."""
    result = ParseResult()
    current: dict[str, str | int] | None = None

    def flush() -> None:
        if current is not None:
            result.items.append(
                make_item(
                    path=str(current.get("path") or "."),
                    span=OneBasedSpan(line=int(current.get("line") or 0)),
                    severity="error",
                    code="stubtest",
                    source=source,
                    message=f"{current['name']} {current['msg']}",
                )
            )

    for raw in lines_of(stdout, stderr):
        text = raw.strip()
        m = _STUBTEST_ERROR.match(text)
        if m is not None:
            flush()
            current = {"name": m.group("name"), "msg": m.group("msg")}
            continue
        at = _STUBTEST_AT.match(text)
        if at is not None and current is not None and at.group(1) == "Stub":
            current["path"] = ctx.normalize(at.group("path"))
            current["line"] = int(at.group("line"))
        elif current is None and text and not text.startswith(("Success:", "Found ")):
            result.keep(raw)
    flush()
    return result
