"""Identity, fingerprints, deltas and verified target fixes (moved from tests/intel)."""

from __future__ import annotations

import pytest

import driveros.diagnostics as diagnostics
from driveros.diagnostics import (
    DiagnosticItem,
    DiagnosticsDelta,
    DiagnosticsSnapshot,
    diff_snapshots,
    fingerprint,
    remaining_targets,
    render_delta,
    render_snapshot,
    targets_fixed,
)


def item(path: str, line: int, code: str | None, message: str, **kw: object) -> DiagnosticItem:
    return DiagnosticItem.model_validate(
        {
            "path": path,
            "line": line,
            "column": 1,
            "code": code,
            "source": "mypy",
            "message": message,
        }
        | kw
    )


def snap(
    *items: DiagnosticItem, checks: tuple[str, ...] = ("mypy",), raw: str = ""
) -> DiagnosticsSnapshot:
    return DiagnosticsSnapshot(
        fingerprint=fingerprint(items, checks), items=items, checks=checks, raw=raw
    )


A = item("a.py", 3, "assignment", "Incompatible types in assignment")
B = item("b.py", 10, "return-value", "Incompatible return value type")
C = item("a.py", 20, "name-defined", 'Name "x" is not defined')


def test_diagnostics_public_all_is_sorted_and_importable() -> None:
    assert list(diagnostics.__all__) == sorted(diagnostics.__all__)
    for name in diagnostics.__all__:
        assert hasattr(diagnostics, name)


def test_fingerprint_is_order_independent_and_ignores_positions_and_raw() -> None:
    moved = A.model_copy(update={"line": 40, "column": 9, "end_line": 41})
    assert fingerprint([A, B, C]) == fingerprint([C, A, B])
    assert fingerprint([A, B]) == fingerprint([moved, B])
    assert snap(A, raw="took 1.2s").fingerprint == snap(A, raw="took 9s").fingerprint


def test_fingerprint_ignores_volatile_message_parts() -> None:
    one = item("a.py", 1, None, "object at 0x7f00aa12 failed after 1.5s")
    two = item("a.py", 1, None, "object at 0x7f99bb34 failed after 12 ms")
    assert fingerprint([one]) == fingerprint([two])


def test_fingerprint_changes_with_content_counts_and_checks() -> None:
    base = fingerprint([A, B])
    assert fingerprint([A]) != base
    assert fingerprint([A, A, B]) != base  # a duplicate is one more problem
    assert fingerprint([A, B.model_copy(update={"severity": "warning"})]) != base
    assert fingerprint([A, B], ["mypy", "ruff"]) != fingerprint([A, B], ["mypy"])


def test_diff_snapshots_reports_new_fixed_unchanged() -> None:
    prev = snap(A, B)
    cur = snap(A.model_copy(update={"line": 5}), C)
    assert diff_snapshots(prev, cur) == DiagnosticsDelta(
        new=(C,), fixed=(B,), unchanged=(A.model_copy(update={"line": 5}),)
    )


def test_diff_snapshots_pairs_duplicates_by_count() -> None:
    second = A.model_copy(update={"line": 30})
    delta = diff_snapshots(snap(A), snap(A, second))
    assert (delta.new, delta.fixed, delta.unchanged) == ((second,), (), (A,))
    assert diff_snapshots(None, snap(A)).new == (A,)
    assert not diff_snapshots(snap(A, B), snap(B, A)).changed


def test_targets_fixed_true_only_when_gone() -> None:
    assert not targets_fixed(snap(A, B), [A])
    assert targets_fixed(snap(B), [A])
    assert not targets_fixed(snap(B), [])  # nothing targeted: nothing verified


def test_targets_fixed_follows_a_shifted_line_but_not_another_error() -> None:
    shifted = A.model_copy(update={"line": A.line + 12})  # imports added above it
    assert not targets_fixed(snap(shifted), [A])
    reworded = A.model_copy(update={"message": "Incompatible types (now phrased differently)"})
    assert not targets_fixed(snap(reworded.model_copy(update={"line": A.line + 1})), [A])
    assert targets_fixed(snap(reworded.model_copy(update={"line": A.line + 15})), [A])
    other_file = A.model_copy(update={"path": "z.py"})
    assert targets_fixed(snap(other_file), [A])


def test_targets_fixed_accepts_editor_spellings_of_paths_and_sources() -> None:
    editor = A.model_copy(update={"path": "./a.py", "source": "Pylance", "code": None})
    assert not targets_fixed(snap(A, checks=("pyright",)), [editor])
    assert targets_fixed(snap(B, checks=("pyright",)), [editor])


def test_targets_fixed_is_false_when_no_check_could_see_the_target() -> None:
    from_eslint = item("w.js", 1, "no-undef", "x is not defined", source="eslint")
    assert not targets_fixed(snap(B, checks=("mypy",)), [from_eslint])
    assert remaining_targets(snap(B, checks=("mypy",)), [from_eslint]) == (from_eslint,)


def test_render_snapshot_lists_every_item_and_keeps_the_raw_output() -> None:
    text = render_snapshot(snap(A, C, raw="[mypy] exit 2\nstrange line"))
    assert text.startswith("2 diagnostics (mypy):")
    assert "a.py:3:1: error [mypy assignment] Incompatible types in assignment" in text
    assert "strange line" in text  # nothing unparsed is dropped, items or not
    assert render_snapshot(snap(checks=())) == "No diagnostics (no checks)."


@pytest.mark.parametrize("limit", [1, 50])
def test_render_delta_names_counts_and_items(limit: int) -> None:
    delta = diff_snapshots(snap(A, B), snap(A, C))
    text = render_delta(delta, limit=limit)
    assert "1 new, 1 fixed, 1 unchanged, 2 total" in text
    assert "fixed: b.py:10:1: error [mypy return-value]" in text
    assert "new: a.py:20:1: error [mypy name-defined]" in text


def test_identity_of_a_failing_test_is_its_node_id() -> None:
    def failing(detail: str) -> DiagnosticItem:
        return item(
            "tests/t.py", 5, "test-failure", f"tests/t.py::test_add: {detail}", source="pytest"
        )

    assert fingerprint([failing("assert 0 == 4")]) == fingerprint([failing("assert 3 == 4")])
    other = item(
        "tests/t.py", 9, "test-failure", "tests/t.py::test_sub: assert 1 == 2", source="pytest"
    )
    assert fingerprint([failing("assert 0 == 4")]) != fingerprint([other])
    delta = diff_snapshots(snap(failing("assert 0 == 4")), snap(failing("assert 3 == 4")))
    assert not delta.changed


def test_targets_fixed_follows_a_failing_test_by_node_id() -> None:
    target = item("tests/t.py", 5, "test-failure", "tests/t.py::test_add: assert 0 == 4")
    moved = item("tests/t.py", 60, "test-failure", "tests/t.py::test_add: assert 3 == 4")
    assert not targets_fixed(snap(moved), [target])
    assert targets_fixed(snap(), [target])
