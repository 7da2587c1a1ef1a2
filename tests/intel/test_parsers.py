"""Parsers against recorded real tool output (tests/intel/data, made by tests/intel/record.py),
against version drift and against garbage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from driveros.diagnostics import DiagnosticItem, OneBasedSpan
from driveros.intel import PathContext, get_parser, parse_output
from driveros.intel._parse_common import make_item

DATA = Path(__file__).resolve().parent / "data"
CASES = sorted(
    p.name.removesuffix(".json") for p in DATA.glob("*.json") if ".expected" not in p.name
)
#: The parser of every toolchain; the generic "gnu" and "raw" parsers come on top.
TOOLCHAINS = ("ruff", "mypy", "pyright", "compileall", "pytest", "tsc", "eslint", "go", "cargo")
CTX = PathContext(roots=("/WORKSPACE",))
GARBAGE = [
    "\x1b[31mwarning: something odd happened\x1b[0m",
    "{not json at all",
    "Segmentation fault (core dumped)",
]


def _load(case: str) -> tuple[dict[str, Any], dict[str, Any]]:
    record = json.loads((DATA / f"{case}.json").read_text())
    expected = json.loads((DATA / f"{case}.expected.json").read_text())
    return record, expected


def test_recorded_cases_cover_every_toolchain() -> None:
    parsers = {json.loads((DATA / f"{c}.json").read_text())["parser"] for c in CASES}
    assert parsers >= set(TOOLCHAINS)


@pytest.mark.parametrize("case", CASES)
def test_parser_recorded_output_matches_expected(case: str) -> None:
    record, expected = _load(case)
    parsed = parse_output(record["parser"], record["stdout"], record["stderr"], CTX, source=case)
    got = [i.model_dump(mode="json") | {"source": ""} for i in parsed.items]
    want = [i | {"source": ""} for i in expected["items"]]
    assert got == want
    assert parsed.unparsed == expected["unparsed"]
    assert parsed.items, "every recorded case holds at least one real diagnostic"


@pytest.mark.parametrize("case", CASES)
def test_parser_garbage_is_kept_not_fatal(case: str) -> None:
    record, expected = _load(case)
    noisy_err = "\n".join([*GARBAGE, record["stderr"]])
    parsed = parse_output(record["parser"], record["stdout"], noisy_err, CTX, source=case)
    assert [i.model_dump(mode="json") | {"source": ""} for i in parsed.items] == [
        i | {"source": ""} for i in expected["items"]
    ]
    for line in GARBAGE:
        assert line in parsed.unparsed


JSON_DOCUMENT_CASES = [c for c in CASES if _load(c)[0]["parser"] in ("ruff", "pyright", "eslint")]


@pytest.mark.parametrize("case", JSON_DOCUMENT_CASES)
def test_json_parser_truncated_document_is_kept_raw(case: str) -> None:
    record, _ = _load(case)
    cut = record["stdout"][: len(record["stdout"]) // 2]
    parsed = parse_output(record["parser"], cut, "", CTX, source=case)
    assert parsed.items == []
    assert parsed.unparsed == [ln.rstrip() for ln in cut.splitlines() if ln.strip()]


def test_ruff_old_versions_without_severity_or_code() -> None:
    out = json.dumps(
        [
            {
                "code": None,
                "message": "SyntaxError: Expected an expression",
                "filename": "/WORKSPACE/a.py",
                "location": {"row": 3, "column": 5},
                "end_location": None,
            },
            {
                "code": "E501",
                "message": "Line too long",
                "filename": "b.py",
                "location": {"row": "7"},
            },
        ]
    )
    items = get_parser("ruff")(out, "", CTX, source="ruff").items
    assert [(i.path, i.line, i.column, i.severity, i.code) for i in items] == [
        ("a.py", 3, 5, "error", None),
        ("b.py", 7, 0, "warning", "E501"),
    ]


def test_mypy_text_form_with_notes_and_summary() -> None:
    out = (
        "src/m.py:3:5: error: Incompatible types in assignment  [assignment]\n"
        "src/m.py:3:5: note: Revealed type is int\n"
        "src/m.py:9: error: Missing return statement  [return]\n"
        "Found 2 errors in 1 file (checked 3 source files)\n"
    )
    items = get_parser("mypy")(out, "", CTX, source="mypy").items
    assert [(i.line, i.column, i.severity, i.code) for i in items] == [
        (3, 5, "error", "assignment"),
        (3, 5, "information", None),
        (9, 0, "error", "return"),
    ]


def test_mypy_json_hint_joins_message_and_columns_are_one_based() -> None:
    line = json.dumps(
        {
            "file": "a.py",
            "line": 2,
            "column": 0,
            "message": "Bad",
            "hint": "Try this",
            "code": "misc",
            "severity": "error",
        }
    )
    (item,) = get_parser("mypy")(line, "", CTX, source="mypy").items
    assert (item.column, item.message) == (1, "Bad\nTry this")


def test_tsc_continuation_lines_and_global_errors() -> None:
    out = (
        "src/a.ts(4,3): error TS2345: Argument of type 'string' is not assignable.\n"
        "  Type 'string' is not assignable to type 'number'.\n"
        "error TS5083: Cannot read file '/WORKSPACE/tsconfig.base.json'.\n"
    )
    items = get_parser("tsc")(out, "", CTX, source="tsc").items
    assert items[0].message.endswith("\nType 'string' is not assignable to type 'number'.")
    assert (items[1].path, items[1].code) == (".", "TS5083")


def test_go_vet_prefix_and_package_headers() -> None:
    err = (
        "# example.com/x\nvet: ./cmd/main.go:3:2: undefined: y\n"
        "go: downloading example.com/dep v1\n"
    )
    ctx = PathContext(roots=("/WORKSPACE",), cwd="svc")
    items = get_parser("go")("", err, ctx, source="go")
    assert [(i.path, i.line, i.column, i.message) for i in items.items] == [
        ("svc/cmd/main.go", 3, 2, "undefined: y")
    ]
    assert items.unparsed == []


def test_cargo_ignores_artifacts_and_keeps_foreign_lines() -> None:
    lines = [
        json.dumps({"reason": "compiler-artifact", "target": {}}),
        "not json",
        json.dumps(
            {
                "reason": "compiler-message",
                "message": {
                    "message": "unused variable: `y`",
                    "level": "warning",
                    "code": {"code": "unused_variables"},
                    "spans": [
                        {
                            "file_name": "src/lib.rs",
                            "line_start": 3,
                            "column_start": 9,
                            "line_end": 3,
                            "column_end": 10,
                            "is_primary": True,
                        }
                    ],
                },
            }
        ),
        json.dumps({"reason": "build-finished", "success": True}),
    ]
    parsed = get_parser("cargo")("\n".join(lines), "   Compiling x v0.1.0\n", CTX, source="cargo")
    assert [(i.path, i.line, i.severity, i.code) for i in parsed.items] == [
        ("src/lib.rs", 3, "warning", "unused_variables")
    ]
    assert parsed.unparsed == ["not json"]


def test_pyright_entry_without_range_is_kept() -> None:
    out = json.dumps(
        {
            "generalDiagnostics": [
                {"file": "/elsewhere/x.py", "severity": "warning", "message": "m"}
            ],
            "summary": {},
        }
    )
    (item,) = get_parser("pyright")(out, "", CTX, source="pyright").items
    assert (item.path, item.line, item.severity) == ("/elsewhere/x.py", 0, "warning")


def test_gnu_parser_reads_codes_and_keeps_the_rest() -> None:
    parsed = get_parser("gnu")(
        "lib/x.c:10:4: warning: shadowed [W12]\nrandom text\n", "", CTX, source="cc"
    )
    assert parsed.items == [
        DiagnosticItem(
            path="lib/x.c",
            line=10,
            column=4,
            severity="warning",
            code="W12",
            source="cc",
            message="shadowed",
        )
    ]
    assert parsed.unparsed == ["random text"]


@pytest.mark.parametrize(
    ("raw", "cwd", "want"),
    [
        ("/WORKSPACE/src/a.py", "", "src/a.py"),
        ("file:///WORKSPACE/src/a.py", "", "src/a.py"),
        ("./a.go", "svc", "svc/a.go"),
        ("../shared/b.ts", "web", "shared/b.ts"),
        ("/usr/lib/python3/x.py", "", "/usr/lib/python3/x.py"),
        ("/WORKSPACE", "", "."),
    ],
)
def test_path_context_normalizes_workspace_relative(raw: str, cwd: str, want: str) -> None:
    assert PathContext(roots=("/WORKSPACE/",), cwd=cwd).normalize(raw) == want


@pytest.mark.parametrize("name", [*TOOLCHAINS, "gnu", "raw"])
def test_parser_survives_binary_noise(name: str) -> None:
    noise = "\x00\xff\ufffd[{]}\n" * 3 + "{" * 50
    parsed = get_parser(name)(noise, noise, CTX, source=name)  # type: ignore[arg-type]
    assert parsed.unparsed, "noise is kept as raw text"


@given(
    line=st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=30).map(
        lambda s: s.replace("\n", "")
    ),
    data=st.data(),
)
def test_columns_in_code_points_inverts_the_tools_unit(line: str, data: st.DataObject) -> None:
    from driveros.intel._parse_common import columns_in_code_points

    at = data.draw(st.integers(0, len(line)))
    end = data.draw(st.integers(at, len(line)))
    for unit, codec, width in (("utf-16", "utf-16-le", 2), ("utf-8", "utf-8", 1)):

        def units(i: int, codec: str = codec, width: int = width) -> int:
            return len(line[:i].encode(codec)) // width + 1

        item = DiagnosticItem(
            path="a", line=2, column=units(at), end_line=2, end_column=units(end), message="m"
        )
        got = columns_in_code_points(item, ["first", line], unit)  # type: ignore[arg-type]
        assert (got.column, got.end_column) == (at + 1, end + 1)


def test_make_item_keeps_a_span_sane() -> None:
    backwards = OneBasedSpan(line=5, column=-3, end_line=2, end_column=9)
    item = make_item(path="a.py", span=backwards, source="t", message="  m  ")
    assert (item.line, item.column, item.end_line, item.end_column) == (5, 0, None, None)
    assert item.message == "m"
    nowhere = make_item(path=".", source="t", message="")
    assert (nowhere.line, nowhere.column, nowhere.message) == (0, 0, "(no message)")


def test_parser_hostile_whitespace_runs_parse_in_one_pass() -> None:
    """A repository's output line with a megabyte of inner whitespace (a compiler quoting its
    source, a file name): each parser reads it in one pass (a lazy message or path before
    ``\\s*$``, and a code searched from inside the run, took hours on the old patterns)."""
    ctx = PathContext(roots=("/ws",))
    gap = " " * (1 << 20)
    gnu = parse_output("gnu", f"a.py:1:2: x{gap}y\nb.py:3: z{gap}[no-code\n", "", ctx, source="g")
    assert [(i.path, i.line, i.message) for i in gnu.items] == [
        ("a.py", 1, f"x{gap}y"),
        ("b.py", 3, f"z{gap}[no-code"),
    ]
    coded = parse_output("gnu", f"c.py:5: w{gap}[some-code]\n", "", ctx, source="g")
    assert [(i.message, i.code) for i in coded.items] == [("w", "some-code")]
    formatted = parse_output("reformat", f"would reformat: d{gap}e.py\n", "", ctx, source="f")
    assert [i.path for i in formatted.items] == [f"d{gap}e.py"]
