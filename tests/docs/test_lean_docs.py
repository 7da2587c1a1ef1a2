"""The docs are reference, not a diary: each page has a size limit, no page dates itself
("this round", "before (main at …)"), and nothing points into a doc by a table's row number
(a heading is the stable anchor), nor is a test named after one."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO_ROOT

DOCS = REPO_ROOT / "docs"
#: Lines per page; pages not named here get DEFAULT_LIMIT. security.md, the threat model with
#: one section per attack and its test, is the one page still over it: split it along its
#: attacks (configuration and secrets; code execution and files) before raising anything.
LIMITS = {"security.md": 1000}
DEFAULT_LIMIT = 400
DIARY = re.compile(r"this round|this session|before \(main at|\bmain at `?[0-9a-f]{7}", re.I)
ROW_REFERENCE = re.compile(r"\.md,? \(?rows? \d|\brows? \d[\d, and]* of (docs/)?\w+\.md", re.I)
ROW_NAME = re.compile(r"row_?\d")
#: Where code and docs refer to docs.
SOURCES = ("core", "server", "tests", "docs", "bench", "editors/vscode/src", "editors/neovim")


def _pages() -> list[Path]:
    pages = sorted(DOCS.glob("*.md"))
    assert len(pages) > 10  # the walk found the docs
    return pages


def _text_files() -> list[Path]:
    found = [REPO_ROOT / "README.md"]
    for top in SOURCES:
        for path in (REPO_ROOT / top).rglob("*"):
            if (
                path.suffix in {".py", ".md", ".ts", ".lua", ".txt"}
                and "node_modules" not in path.parts
            ):
                found.append(path)
    return [p for p in found if p.resolve() != Path(__file__).resolve()]


def test_each_doc_page_stays_under_its_size_limit() -> None:
    long = {
        page.name: n
        for page in _pages()
        if (n := len(page.read_text(encoding="utf-8").splitlines()))
        > LIMITS.get(page.name, DEFAULT_LIMIT)
    }
    assert long == {}, "split the page along its concepts, or move measurements to bench/"


def test_no_doc_page_reads_like_a_diary() -> None:
    found = [
        f"{page.name}:{n}: {line.strip()}"
        for page in [*_pages(), REPO_ROOT / "README.md"]
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if DIARY.search(line)
    ]
    assert found == [], "say what is true now; measurements go to bench/RESULTS.md"


def test_nothing_points_into_a_doc_by_row_number() -> None:
    found = [
        f"{path.relative_to(REPO_ROOT)}:{n}"
        for path in _text_files()
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if ROW_REFERENCE.search(line)
    ]
    assert found == [], "refer to a doc by its heading, never a row number"


def test_no_test_is_named_after_a_row() -> None:
    tests = REPO_ROOT / "tests"
    files = [p.name for p in tests.rglob("test_*.py") if ROW_NAME.search(p.stem)]
    functions = [
        f"{p.relative_to(REPO_ROOT)}::{m.group(1)}"
        for p in tests.rglob("test_*.py")
        for m in re.finditer(r"def (test_\w+)", p.read_text(encoding="utf-8"))
        if ROW_NAME.search(m.group(1))
    ]
    assert (files, functions) == ([], []), "name a test after the behaviour it checks"


def test_the_checks_catch_what_they_ban() -> None:
    assert DIARY.search("Run start, this round") and DIARY.search("before (main at ae1e095)")
    assert ROW_REFERENCE.search("(docs/security.md, row 8)")
    assert ROW_REFERENCE.search("docs/security.md (row 10)")
    assert ROW_REFERENCE.search("Rows 1, 2 and 3 of docs/security.md")
    assert not ROW_REFERENCE.search("(issue 27, rows 1-4)")
    assert ROW_NAME.search("test_allowlist_row8") and not ROW_NAME.search("test_throw_away")
