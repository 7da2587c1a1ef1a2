"""Stuck detectors: named, independent judges fed one TurnObservation per turn.

Each implements :class:`~driveros.agent._hooks.StuckDetector` and explains what it saw.
Calls the approval policy blocked are ignored here (a model that keeps asking for blocked
actions ends ``refused``, not ``stuck``). Polling that makes progress (the same call with
different outputs) never fires these.
"""

from __future__ import annotations

import json
import re
from collections import Counter

from driveros.agent._hooks import StuckDetector, StuckVerdict, ToolObservation, TurnObservation

_VOLATILE = re.compile(r"0x[0-9a-fA-F]+|\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds)\b|\d\d:\d\d:\d\d")


def call_key(call: ToolObservation) -> str:
    """A stable signature of a call: its name and canonical arguments."""
    return f"{call.name}({json.dumps(call.arguments, sort_keys=True)})"


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def normalize_output(text: str) -> str:
    """Output with volatile bits (timings, addresses, clock times) masked and spaces folded."""
    return " ".join(_VOLATILE.sub("#", text).split())


def _live_calls(obs: TurnObservation) -> list[ToolObservation]:
    return [c for c in obs.tool_calls if not c.blocked]


class RepeatedCallDetector:
    """The same call returning the same result ``threshold`` times with no edit in between."""

    name = "repeated_call"

    def __init__(self, threshold: int = 3) -> None:
        self._threshold = threshold
        self._seen: Counter[tuple[str, str]] = Counter()

    def observe(self, obs: TurnObservation) -> StuckVerdict | None:
        if obs.edited:
            self._seen.clear()  # the world changed: re-reading is legitimate
        for call in _live_calls(obs):
            key = (call_key(call), normalize_output(call.output))
            self._seen[key] += 1
            if self._seen[key] >= self._threshold:
                return StuckVerdict(
                    detector=self.name,
                    detail=f"{call_key(call)} returned the same result "
                    f"{self._seen[key]} times with nothing changed in between",
                    evidence=(call_key(call), _short(call.output)),
                )
        return None


class FailingCallDetector:
    """The same call failing ``threshold`` times in a row with no edit in between."""

    name = "failing_call"

    def __init__(self, threshold: int = 4) -> None:
        self._threshold = threshold
        self._failures: Counter[str] = Counter()

    def observe(self, obs: TurnObservation) -> StuckVerdict | None:
        if obs.edited:
            self._failures.clear()
        for call in _live_calls(obs):
            key = call_key(call)
            if call.ok:
                self._failures.pop(key, None)
                continue
            self._failures[key] += 1
            if self._failures[key] >= self._threshold:
                return StuckVerdict(
                    detector=self.name,
                    detail=f"{key} failed {self._failures[key]} times in a row",
                    evidence=(key, _short(call.output)),
                )
        return None


class CycleDetector:
    """The calls (with their results) going round in a cycle: A-B-A-B or A-B-C-A-B-C.

    A cycle of period ``p`` fires after ``repeats`` full rounds of ``p`` distinct steps.
    """

    name = "cycle"

    def __init__(self, periods: tuple[int, ...] = (2, 3), repeats: int = 2) -> None:
        self._periods = periods
        self._repeats = repeats
        self._steps: list[str] = []

    def observe(self, obs: TurnObservation) -> StuckVerdict | None:
        for call in _live_calls(obs):
            self._steps.append(f"{call_key(call)} -> {normalize_output(call.output)[:200]}")
            verdict = self._check()
            if verdict is not None:
                return verdict
        return None

    def _check(self) -> StuckVerdict | None:
        for period in self._periods:
            window = period * self._repeats
            if len(self._steps) < window:
                continue
            tail = self._steps[-window:]
            cycle = tail[:period]
            if len(set(cycle)) != period:
                continue
            if all(tail[i] == cycle[i % period] for i in range(window)):
                names = [step.split(" -> ", 1)[0] for step in cycle]
                pattern = "-".join("ABC"[i] for i in range(period))
                return StuckVerdict(
                    detector=self.name,
                    detail=f"the same {period} steps repeated {self._repeats} times "
                    f"({pattern}-{pattern})",
                    evidence=tuple(_short(n) for n in names),
                )
        return None


class RepeatedErrorDetector:
    """The same error output coming back ``threshold`` times in a row (edits or not)."""

    name = "repeated_error"

    def __init__(self, threshold: int = 3) -> None:
        self._threshold = threshold
        self._last: str | None = None
        self._count = 0

    def observe(self, obs: TurnObservation) -> StuckVerdict | None:
        for call in _live_calls(obs):
            if call.ok:
                continue
            text = normalize_output(call.output)
            if text == self._last:
                self._count += 1
            else:
                self._last, self._count = text, 1
            if self._count >= self._threshold:
                return StuckVerdict(
                    detector=self.name,
                    detail=f"the same error came back {self._count} times",
                    evidence=(call_key(call), _short(call.output)),
                )
        return None


class RepeatedTextDetector:
    """The model saying the same thing ``threshold`` turns in a row."""

    name = "repeated_text"

    def __init__(self, threshold: int = 3, min_chars: int = 20) -> None:
        self._threshold = threshold
        self._min_chars = min_chars
        self._last = ""
        self._count = 0

    def observe(self, obs: TurnObservation) -> StuckVerdict | None:
        text = " ".join(obs.text.split())
        if len(text) < self._min_chars:
            self._last, self._count = "", 0
            return None
        if text == self._last:
            self._count += 1
        else:
            self._last, self._count = text, 1
        if self._count >= self._threshold:
            return StuckVerdict(
                detector=self.name,
                detail=f"the model repeated itself {self._count} turns in a row",
                evidence=(_short(text),),
            )
        return None


def default_detectors() -> list[StuckDetector]:
    """A fresh set of the built-in detectors (they keep per-run state)."""
    return [
        RepeatedCallDetector(),
        FailingCallDetector(),
        CycleDetector(),
        RepeatedErrorDetector(),
        RepeatedTextDetector(),
    ]
