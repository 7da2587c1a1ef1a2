"""Each stuck detector fires on its pattern and stays quiet on progress (polling)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from driveros.agent import (
    CycleDetector,
    FailingCallDetector,
    RepeatedCallDetector,
    RepeatedErrorDetector,
    RepeatedTextDetector,
    StuckDetector,
    ToolObservation,
    TurnObservation,
    default_detectors,
)
from driveros.testing import ToolCallSpec, Turn

from .conftest import run_scripted


def call(name: str, ok: bool = True, output: str = "", **arguments: Any) -> ToolObservation:
    return ToolObservation(call_id="c", name=name, arguments=arguments, ok=ok, output=output)


def turns(*calls: ToolObservation, edited: bool = False) -> list[TurnObservation]:
    return [
        TurnObservation(turn=i + 1, tool_calls=(c,), edited=edited) for i, c in enumerate(calls)
    ]


def feed(detector: StuckDetector, observations: list[TurnObservation]) -> list[str | None]:
    verdicts = [detector.observe(o) for o in observations]
    return [v.detector if v else None for v in verdicts]


def test_stuck_detectors_implement_the_protocol() -> None:
    names = [d.name for d in default_detectors()]
    assert names == ["repeated_call", "failing_call", "cycle", "repeated_error", "repeated_text"]
    assert all(isinstance(d, StuckDetector) for d in default_detectors())


def test_repeated_call_fires_on_same_call_same_result() -> None:
    same = call("run", output="nothing new", command="git status")
    assert feed(RepeatedCallDetector(), turns(same, same, same)) == [None, None, "repeated_call"]


def test_repeated_call_ignores_polling_that_makes_progress() -> None:
    polls = [call("run", output=f"{n}% done", command="cat progress") for n in range(10, 90, 10)]
    assert set(feed(RepeatedCallDetector(), turns(*polls))) == {None}


def test_repeated_call_resets_after_an_edit() -> None:
    same = call("read_file", output="x = 1", path="a.py")
    observations = turns(same, same) + turns(same, edited=True) + turns(same)
    assert set(feed(RepeatedCallDetector(), observations)) == {None}


def test_failing_call_fires_when_the_same_call_keeps_failing() -> None:
    failing = [call("run", ok=False, output=f"error at {t}", command="make") for t in "abcd"]
    verdicts = feed(FailingCallDetector(), turns(*failing))
    assert verdicts == [None, None, None, "failing_call"]


def test_failing_call_is_reset_by_a_success() -> None:
    fail = call("run", ok=False, output="boom", command="make")
    ok = call("run", ok=True, output="built", command="make")
    assert set(feed(FailingCallDetector(), turns(fail, fail, fail, ok, fail, fail))) == {None}


def test_cycle_fires_on_abab_and_abcabc() -> None:
    a = call("read_file", output="A", path="a")
    b = call("read_file", output="B", path="b")
    c = call("list_files", output="C")
    assert feed(CycleDetector(), turns(a, b, a, b))[-1] == "cycle"
    verdicts = feed(CycleDetector(), turns(a, b, c, a, b, c))
    assert verdicts == [None] * 5 + ["cycle"]


def test_cycle_ignores_alternation_with_changing_results() -> None:
    steps = []
    for n in range(4):
        steps.append(call("run", output=f"{n} jobs left", command="jobs"))
        steps.append(call("read_file", output=f"log line {n}", path="log"))
    assert set(feed(CycleDetector(), turns(*steps))) == {None}


def test_cycle_catches_edit_and_revert() -> None:
    forth = call("edit_file", output="edited", path="a.py", old_string="x", new_string="y")
    back = call("edit_file", output="edited", path="a.py", old_string="y", new_string="x")
    observations = turns(forth, back, forth, back, edited=True)
    assert feed(CycleDetector(), observations)[-1] == "cycle"


def test_repeated_error_fires_across_edits_and_masks_timings() -> None:
    errors = [
        call("run", ok=False, output=f"FAILED test_x - assert 1 == 2 in {t}s", command="pytest")
        for t in ("0.12", "0.31", "0.08")
    ]
    verdicts = feed(RepeatedErrorDetector(), turns(*errors, edited=True))
    assert verdicts == [None, None, "repeated_error"]


def test_repeated_error_resets_on_a_different_error() -> None:
    e1 = call("run", ok=False, output="error one", command="pytest")
    e2 = call("run", ok=False, output="error two", command="pytest")
    assert set(feed(RepeatedErrorDetector(), turns(e1, e1, e2, e2, e1))) == {None}


def test_repeated_text_fires_when_the_model_repeats_itself() -> None:
    text = "Let me run the tests again to see what happens."
    obs = [TurnObservation(turn=i, text=text) for i in range(1, 4)]
    assert feed(RepeatedTextDetector(), obs) == [None, None, "repeated_text"]


def test_repeated_text_ignores_short_and_varied_text() -> None:
    obs = [TurnObservation(turn=i, text="Checking.") for i in range(1, 6)]
    obs += [TurnObservation(turn=i, text=f"Step {i}: reading file number {i}") for i in range(5)]
    assert set(feed(RepeatedTextDetector(), obs)) == {None}


def test_blocked_calls_are_not_stuck_evidence() -> None:
    blocked = ToolObservation(
        call_id="c",
        name="run",
        arguments={"command": "rm -rf /"},
        ok=False,
        output="refused",
        blocked=True,
    )
    observations = [TurnObservation(turn=i, tool_calls=(blocked,)) for i in range(1, 6)]
    for detector in default_detectors():
        assert set(feed(detector, observations)) == {None}


async def test_stuck_run_ends_with_exit_4_and_names_the_detector(calc_repo: Path) -> None:
    look = ToolCallSpec("list_files", {})
    out = await run_scripted([Turn(tool_calls=[look])] * 5, calc_repo)
    result = out.report.result
    assert (result.outcome, result.exit_code) == ("stuck", 4)
    assert result.stuck_detector == "repeated_call"
    (stuck,) = out.of("stuck")
    assert stuck.detector == "repeated_call" and stuck.evidence
    assert out.types[-2:] == ["stuck", "result"]


async def test_polling_with_progress_is_not_stuck(calc_repo: Path) -> None:
    (calc_repo / "test_poll.py").write_text(
        "from pathlib import Path\n\n\ndef test_poll():\n"
        "    p = Path('count.txt')\n"
        "    n = int(p.read_text()) + 1 if p.exists() else 1\n"
        "    p.write_text(str(n))\n"
        "    print(f'progress {n}')\n"
    )
    poll = ToolCallSpec("run", {"command": "python -m pytest -q -s test_poll.py"})
    script = [Turn(tool_calls=[poll])] * 4 + [Turn(text="The job finished after 4 polls.")]
    out = await run_scripted(script, calc_repo)
    assert out.report.result.outcome == "answered"
    assert not out.of("stuck")
    assert (calc_repo / "count.txt").read_text() == "4"
