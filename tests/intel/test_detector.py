"""BuildDiagnosticsDetector on scripted sequences of edit turns: stall, oscillate, worsen,
and the runs that make progress (or do not edit) that must never fire."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from driveros.agent import StuckDetector, StuckVerdict, ToolObservation, TurnObservation
from driveros.diagnostics import DiagnosticItem, DiagnosticsSnapshot, fingerprint
from driveros.intel import BuildDiagnosticsDetector


def err(path: str, message: str, line: int = 1, code: str | None = "misc") -> DiagnosticItem:
    return DiagnosticItem(path=path, line=line, code=code, source="mypy", message=message)


def snap(*items: DiagnosticItem) -> DiagnosticsSnapshot:
    return DiagnosticsSnapshot(
        fingerprint=fingerprint(items, ["mypy"]), items=items, checks=("mypy",)
    )


def edit_turn(
    turn: int, snapshot: DiagnosticsSnapshot, path: str | None = "a.py"
) -> TurnObservation:
    calls = ()
    if path is not None:
        calls = (
            ToolObservation(
                call_id=f"c{turn}", name="edit_file", arguments={"path": path}, ok=True, output="ok"
            ),
        )
    return TurnObservation(turn=turn, edited=True, tool_calls=calls, diagnostics=snapshot)


def feed(
    det: BuildDiagnosticsDetector, obs: Sequence[TurnObservation]
) -> list[tuple[int, StuckVerdict]]:
    return [(o.turn, v) for o in obs if (v := det.observe(o)) is not None]


E1 = err("a.py", "first problem")
E2 = err("a.py", "second problem")
E3 = err("a.py", "third problem")
E4 = err("a.py", "fourth problem")


def test_detector_satisfies_the_protocol() -> None:
    det = BuildDiagnosticsDetector()
    assert isinstance(det, StuckDetector)
    assert det.name == "build_diagnostics"
    assert det.k == 3


def test_detector_stall_fires_after_k_unchanged_edit_turns() -> None:
    det = BuildDiagnosticsDetector(k=3)
    s = snap(E1, E2)
    fired = feed(det, [edit_turn(t, s) for t in range(1, 6)])
    assert [t for t, _ in fired] == [4]
    verdict = fired[0][1]
    assert verdict.detail.startswith("no improvement")
    assert verdict.evidence == (
        "a.py:1: error [mypy misc] first problem",
        "a.py:1: error [mypy misc] second problem",
    )


def test_detector_k_is_configurable() -> None:
    s = snap(E1)
    assert [
        t for t, _ in feed(BuildDiagnosticsDetector(k=1), [edit_turn(t, s) for t in (1, 2)])
    ] == [2]
    assert feed(BuildDiagnosticsDetector(k=5), [edit_turn(t, s) for t in range(1, 6)]) == []


def test_detector_turns_without_edits_do_not_count() -> None:
    det = BuildDiagnosticsDetector(k=2)
    s = snap(E1)
    polling = [
        TurnObservation(turn=t, edited=False, diagnostics=s) if t % 2 else edit_turn(t, s)
        for t in range(1, 6)
    ]
    # edit turns 2 and 4 only: the first is the reference, the second one unchanged turn
    assert feed(det, polling) == []
    assert [t for t, _ in feed(det, [edit_turn(6, s)])] == [6]


def test_detector_progress_never_fires() -> None:
    det = BuildDiagnosticsDetector(k=2)
    steps = [snap(E1, E2, E3, E4), snap(E1, E2, E3), snap(E1, E2), snap(E1), snap()]
    assert feed(det, [edit_turn(t, s) for t, s in enumerate(steps, 1)]) == []


def test_detector_clean_build_never_stalls() -> None:
    det = BuildDiagnosticsDetector(k=2)
    assert feed(det, [edit_turn(t, snap()) for t in range(1, 8)]) == []


def test_detector_oscillation_fires_when_a_fixed_error_returns() -> None:
    det = BuildDiagnosticsDetector(k=3)
    steps = [snap(E1), snap(E2), snap(E1)]  # fix E1 (introducing E2), then E1 is back
    fired = feed(det, [edit_turn(t, s) for t, s in enumerate(steps, 1)])
    assert [t for t, _ in fired] == [3]
    assert fired[0][1].detail.startswith("oscillation")
    assert fired[0][1].evidence == ("a.py:1: error [mypy misc] first problem",)


def test_detector_oscillation_threshold_is_configurable() -> None:
    det = BuildDiagnosticsDetector(k=9, reappear=2)
    steps = [snap(E1), snap(E2), snap(E1), snap(E2), snap(E1)]
    fired = feed(det, [edit_turn(t, s) for t, s in enumerate(steps, 1)])
    assert [t for t, _ in fired] == [5]


def test_detector_syntax_error_turn_does_not_count_as_a_fix() -> None:
    # mypy stops at a syntax error, so E1 seems to vanish for one turn and come back
    syntax = err("b.py", "invalid syntax", code="syntax")
    det = BuildDiagnosticsDetector(k=3)
    steps = [snap(E1, E2), snap(syntax), snap(E1)]
    assert feed(det, [edit_turn(t, s) for t, s in enumerate(steps, 1)]) == []


def test_detector_worse_fires_after_k_rising_turns() -> None:
    det = BuildDiagnosticsDetector(k=3)
    steps = [snap(E1), snap(E1, E2), snap(E1, E2, E3), snap(E1, E2, E3, E4)]
    fired = feed(det, [edit_turn(t, s) for t, s in enumerate(steps, 1)])
    assert [t for t, _ in fired] == [4]
    assert fired[0][1].detail.startswith(
        "worse: errors rose on 3 edit turns in a row (1 → 2 → 3 → 4)"
    )


def test_detector_worse_resets_when_a_turn_does_not_rise() -> None:
    det = BuildDiagnosticsDetector(k=3)
    F = [err("c.py", f"extra {n}") for n in range(5)]
    steps = [snap(E1), snap(E1, F[0]), snap(E1, F[0], F[1]), snap(E1, F[1]), snap(E1, F[1], F[2])]
    # rises at 2, 3, falls at 4 (F[0] fixed, nothing returns), rises at 5: never 3 in a row
    assert feed(det, [edit_turn(t, s) for t, s in enumerate(steps, 1)]) == []


def test_detector_preexisting_errors_elsewhere_do_not_stall_unrelated_work() -> None:
    legacy = err("legacy/old.py", "ancient problem")
    baseline = snap(legacy)
    det = BuildDiagnosticsDetector(k=2, baseline=baseline)
    turns = [edit_turn(t, baseline, path="src/new_feature.py") for t in range(1, 6)]
    assert feed(det, turns) == []
    # ...but editing the file that holds them without changing anything does stall
    assert [
        t for t, _ in feed(det, [edit_turn(t, baseline, path="legacy/old.py") for t in (6, 7)])
    ] == [7]


def test_detector_targets_keep_preexisting_errors_in_play() -> None:
    legacy = err("legacy/old.py", "ancient problem")
    det = BuildDiagnosticsDetector(k=2, baseline=snap(legacy), targets=[legacy])
    turns = [edit_turn(t, snap(legacy), path="elsewhere.py") for t in (1, 2)]
    assert [t for t, _ in feed(det, turns)] == [2]


def test_detector_edits_through_run_count_as_touching_everything() -> None:
    legacy = err("legacy/old.py", "ancient problem")
    det = BuildDiagnosticsDetector(k=2, baseline=snap(legacy))
    turns = [edit_turn(t, snap(legacy), path=None) for t in (1, 2)]
    assert [t for t, _ in feed(det, turns)] == [2]


@pytest.mark.parametrize("bad", [{"k": 0}, {"reappear": 0}])
def test_detector_rejects_nonsense_settings(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        BuildDiagnosticsDetector(**bad)


def test_detector_set_baseline_after_construction() -> None:
    legacy = err("legacy/old.py", "ancient problem")
    det = BuildDiagnosticsDetector(k=2)
    det.set_baseline(snap(legacy))
    # the baseline is the reference: the first edit turn already counts
    turns = [edit_turn(t, snap(legacy), path="legacy/old.py") for t in (1, 2)]
    assert [t for t, _ in feed(det, turns)] == [2]
    det.set_baseline(snap())  # too late: ignored
    assert [
        t for t, _ in feed(det, [edit_turn(t, snap(legacy), "legacy/old.py") for t in (3, 4)])
    ] == [4]
