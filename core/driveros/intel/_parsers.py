"""The parser registry: a CheckSpec's ``parser`` name → the function reading its output."""

from __future__ import annotations

import logging
from typing import Protocol

from driveros.diagnostics import ColumnUnit
from driveros.intel._config import ParserName
from driveros.intel._parse_common import ParseResult, PathContext, parse_gnu, parse_raw
from driveros.intel._parse_native import parse_cargo, parse_eslint, parse_go, parse_tsc
from driveros.intel._parse_python import (
    parse_compileall,
    parse_mypy,
    parse_pyright,
    parse_pytest,
    parse_ruff,
)
from driveros.intel._parse_tests import (
    parse_flake8,
    parse_gotest,
    parse_jest,
    parse_reformat,
    parse_stubtest,
    parse_tap,
    parse_unittest,
)


class Parser(Protocol):
    def __call__(
        self, stdout: str, stderr: str, ctx: PathContext, *, source: str
    ) -> ParseResult: ...


#: What a parser's columns count when it is not code points (measured; docs/diagnostics.md,
#: "Column units"): the feed converts them on the file's text.
COLUMN_UNITS: dict[str, ColumnUnit] = {
    "pyright": "utf-16",
    "tsc": "utf-16",
    "eslint": "utf-16",
    "go": "utf-8",
}


def get_parser(name: ParserName) -> Parser:
    """The parser called ``name`` (one of :data:`ParserName`)."""
    parsers: dict[str, Parser] = {
        "ruff": parse_ruff,
        "mypy": parse_mypy,
        "pyright": parse_pyright,
        "compileall": parse_compileall,
        "pytest": parse_pytest,
        "tsc": parse_tsc,
        "eslint": parse_eslint,
        "go": parse_go,
        "cargo": parse_cargo,
        "gnu": parse_gnu,
        "raw": parse_raw,
        "unittest": parse_unittest,
        "flake8": parse_flake8,
        "reformat": parse_reformat,
        "stubtest": parse_stubtest,
        "gotest": parse_gotest,
        "tap": parse_tap,
        "jest": parse_jest,
    }
    return parsers[name]


def parse_output(
    parser: ParserName, stdout: str, stderr: str, ctx: PathContext, *, source: str
) -> ParseResult:
    """Parse one run's output; a parser that crashes on garbage loses nothing (all raw)."""
    try:
        return get_parser(parser)(stdout, stderr, ctx, source=source)
    except Exception as exc:  # a parser bug must not hide the tool's output
        log = logging.getLogger(__name__)
        # one line for the user; the traceback only for whoever debugs driveros
        log.warning("parser %s failed (%s: %s); output kept raw", parser, type(exc).__name__, exc)
        log.debug("parser %s traceback", parser, exc_info=True)
        return parse_raw(stdout, stderr, ctx, source=source)
