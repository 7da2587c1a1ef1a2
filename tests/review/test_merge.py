"""rebase_text: carry the agent's hunks onto a document the user edited since the run started."""

from __future__ import annotations

import pytest

from driveros.review import rebase_text

BASE = "".join(f"line {i}\n" for i in range(1, 21))


def _edit(text: str, n: int, new: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[n - 1] = new
    return "".join(lines)


def test_rebase_text_disjoint_edits_merge() -> None:
    theirs = _edit(BASE, 2, "line 2 (user)\n")
    ours = _edit(BASE, 15, "line 15 (agent)\n")
    assert rebase_text(BASE, theirs, ours) == _edit(theirs, 15, "line 15 (agent)\n")


def test_rebase_text_insertions_and_deletions_merge() -> None:
    theirs = "header\n" + BASE  # the user added a line at the top
    ours = BASE.replace("line 10\n", "").replace("line 18\n", "line 18\nextra\n")
    merged = rebase_text(BASE, theirs, ours)
    assert merged == "header\n" + ours


def test_rebase_text_same_line_conflicts() -> None:
    theirs = _edit(BASE, 5, "line 5 (user)\n")
    ours = _edit(BASE, 5, "line 5 (agent)\n")
    assert rebase_text(BASE, theirs, ours) is None


def test_rebase_text_adjacent_lines_conflict() -> None:
    theirs = _edit(BASE, 5, "line 5 (user)\n")
    ours = _edit(BASE, 6, "line 6 (agent)\n")
    assert rebase_text(BASE, theirs, ours) is None


def test_rebase_text_insert_at_the_same_place_conflicts() -> None:
    theirs = BASE + "user tail\n"
    ours = BASE + "agent tail\n"
    assert rebase_text(BASE, theirs, ours) is None


@pytest.mark.parametrize(
    ("theirs", "ours", "expected"),
    [
        (BASE, _edit(BASE, 3, "x\n"), _edit(BASE, 3, "x\n")),  # user did nothing
        (_edit(BASE, 3, "x\n"), BASE, _edit(BASE, 3, "x\n")),  # agent did nothing
        (_edit(BASE, 3, "x\n"), _edit(BASE, 3, "x\n"), _edit(BASE, 3, "x\n")),  # same edit
    ],
)
def test_rebase_text_trivial_cases(theirs: str, ours: str, expected: str) -> None:
    assert rebase_text(BASE, theirs, ours) == expected


def test_rebase_text_identical_hunk_among_others() -> None:
    both = _edit(BASE, 8, "same\n")
    theirs = _edit(both, 1, "user top\n")
    ours = _edit(both, 20, "agent bottom\n")
    assert rebase_text(BASE, theirs, ours) == _edit(theirs, 20, "agent bottom\n")


def test_rebase_text_empty_base() -> None:
    assert rebase_text("", "", "new\n") == "new\n"
    assert rebase_text("", "user\n", "agent\n") is None
