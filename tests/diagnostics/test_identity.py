"""One identity for the per-turn delta (the ``diagnostics`` event), the stuck detector and
target matching. Before ``driveros.diagnostics`` the agent's delta compared
``(path, severity, code, message with whitespace collapsed, source)`` while the detector and
``targets_fixed`` compared the normalised identity: on the inputs below the event said
"1 new, 1 fixed" while the detector and the targets said "the same problem"."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from driveros.diagnostics import (
    DiagnosticItem,
    DiagnosticsSnapshot,
    diff_snapshots,
    fingerprint,
    item_key,
    remaining_targets,
)


def old_agent_key(item: DiagnosticItem) -> tuple[object, ...]:
    """The rule the agent's delta used (removed): kept here to show the disagreement."""
    return (item.path, item.severity, item.code, " ".join(item.message.split()), item.source)


def snap(*items: DiagnosticItem) -> DiagnosticsSnapshot:
    checks = tuple(sorted({i.source for i in items})) or ("pytest",)
    return DiagnosticsSnapshot(fingerprint=fingerprint(items, checks), items=items, checks=checks)


def failing_test(message: str, path: str = "tests/t.py") -> DiagnosticItem:
    return DiagnosticItem(path=path, line=5, code="test-failure", source="pytest", message=message)


def mypy(message: str, path: str = "a.py") -> DiagnosticItem:
    return DiagnosticItem(path=path, line=3, column=1, code="misc", source="mypy", message=message)


#: (before, after): one problem, spelled differently by the tools from one turn to the next.
SAME_PROBLEM = {
    "a test failing with other values": (
        failing_test("tests/t.py::test_add: assert -1 == 5"),
        failing_test("tests/t.py::test_add: assert 6 == 5"),
    ),
    "an object address": (
        mypy("cannot pickle <object at 0x7f00aa12>"),
        mypy("cannot pickle <object at 0x7f99bb34>"),
    ),
    "a duration": (mypy("check timed out after 1.5s"), mypy("check timed out after 12 ms")),
    "a path spelled with ./": (
        mypy("Name x is not defined"),
        mypy("Name x is not defined", "./a.py"),
    ),
}


@pytest.mark.parametrize("case", SAME_PROBLEM)
def test_the_old_disagreement_now_has_one_answer(case: str) -> None:
    before, after = SAME_PROBLEM[case]
    assert old_agent_key(before) != old_agent_key(after)  # the event said: 1 new, 1 fixed
    assert remaining_targets(snap(after), [before]) == (before,)  # the targets said: still there
    delta = diff_snapshots(snap(before), snap(after))
    assert (delta.new, delta.fixed, delta.unchanged) == ((), (), (after,))
    assert item_key(before) == item_key(after)
    assert snap(before).fingerprint == snap(after).fingerprint  # so the detector's stall sees it


def test_a_changed_severity_is_a_change() -> None:
    """The agent's rule counted severity, the feed's did not: an error downgraded to a warning
    is fixed as an error and new as a warning (the editor must not keep showing an error)."""
    error = mypy("Unused variable x")
    warning = error.model_copy(update={"severity": "warning"})
    delta = diff_snapshots(snap(error), snap(warning))
    assert (delta.new, delta.fixed) == ((warning,), (error,))
    assert snap(error).fingerprint != snap(warning).fingerprint


items = st.builds(
    DiagnosticItem,
    path=st.sampled_from(["a.py", "./a.py", "b.py", "file://a.py"]),
    line=st.integers(0, 40),
    column=st.integers(0, 5),
    severity=st.sampled_from(["error", "warning"]),
    code=st.sampled_from([None, "misc", "test-failure"]),
    source=st.sampled_from(["mypy", "pytest"]),
    message=st.sampled_from(
        ["x: took 1s", "x: took 2 ms", "x:  took 1s", "y at 0x1f", "y at 0xff", "z"]
    ),
)


@given(st.lists(items, max_size=6), st.lists(items, max_size=6))
def test_delta_fingerprint_and_identity_agree(
    before: list[DiagnosticItem], after: list[DiagnosticItem]
) -> None:
    prev, cur = snap(*before), snap(*after)
    delta = diff_snapshots(prev, cur)
    assert sorted(map(item_key, delta.new + delta.unchanged)) == sorted(map(item_key, after))
    assert len(delta.fixed) + len(delta.unchanged) == len(before)
    # nothing changed by identity exactly when the fingerprints agree
    same_checks = prev.checks == cur.checks
    if same_checks:
        assert (not delta.changed) == (prev.fingerprint == cur.fingerprint)
