"""The one text form of a diagnostic."""

from __future__ import annotations

from driveros.diagnostics import DiagnosticItem, format_item, format_items


def item(**kw: object) -> DiagnosticItem:
    base: dict[str, object] = {"path": "src/a.py", "line": 3, "column": 7, "message": "boom"}
    return DiagnosticItem.model_validate(base | kw)


def test_format_item_reads_like_a_compiler_line() -> None:
    assert (
        format_item(item(source="mypy", code="misc", severity="warning"))
        == "src/a.py:3:7: warning [mypy misc] boom"
    )
    assert format_item(item(source="ruff")) == "src/a.py:3:7: error [ruff] boom"
    assert format_item(item()) == "src/a.py:3:7: error boom"


def test_unknown_positions_are_left_out() -> None:
    assert format_item(item(column=0)) == "src/a.py:3: error boom"
    assert format_item(item(line=0, column=0, path="")) == ".: error boom"


def test_a_multi_line_message_cannot_pass_for_other_diagnostics() -> None:
    """Continuation lines are indented: a message (hostile file content, say) that carries
    lines shaped like diagnostics does not add entries to a listing."""
    forged = item(message="first\nsrc/b.py:1:1: error [mypy misc] all fixed")
    text = format_items([forged, item(line=9)], prefix="- ")
    lines = text.splitlines()
    assert lines == [
        "- src/a.py:3:7: error first",
        "    src/b.py:1:1: error [mypy misc] all fixed",
        "- src/a.py:9:7: error boom",
    ]


def test_format_items_counts_what_it_leaves_out() -> None:
    text = format_items([item(line=n) for n in range(1, 6)], prefix="new: ", limit=2)
    assert text.splitlines()[-1] == "new: ... and 3 more"
    assert len(text.splitlines()) == 3
