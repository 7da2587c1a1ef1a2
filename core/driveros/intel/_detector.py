"""BuildDiagnosticsDetector: judge a run stuck from what the project's tools say after edits.

Three rules, checked on every turn that edited a file and carries a snapshot (other turns
are ignored entirely):

- **oscillation**: an error that was fixed at an earlier edit turn is back;
- **worse**: the error count rose on each of the last ``k`` edit turns;
- **stall**: the fingerprint did not change over the last ``k`` edit turns while errors
  that are *in play* remain (errors the run introduced, errors in files the turn edited,
  or the targets the run was asked to fix). Pre-existing errors in files the agent is not
  touching never stall a run that is busy elsewhere.

A snapshot holding a syntax error does not count as fixing anything: checkers such as
mypy stop at a syntax error, so everything else seems to vanish for a turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from driveros._plural import count
from driveros._tool_names import EDIT_TOOLS
from driveros.agent import StuckVerdict, TurnObservation
from driveros.diagnostics import (
    DiagnosticItem,
    DiagnosticsSnapshot,
    ItemKey,
    format_item,
    item_key,
    remaining_targets,
)

_META_CODES = frozenset({"timeout", "check-failed", "config"})
_EVIDENCE = 10


def _errors(snapshot: DiagnosticsSnapshot) -> list[DiagnosticItem]:
    return [i for i in snapshot.items if i.severity == "error" and i.code not in _META_CODES]


def _is_syntax(item: DiagnosticItem) -> bool:
    code = (item.code or "").lower()
    return (
        code in {"syntax", "e999", "syntaxerror", "invalid-syntax"}
        or item.message.startswith(("SyntaxError", "invalid syntax"))
        or (item.source == "ruff" and item.code is None)
        or (item.source == "tsc" and code.startswith("ts1") and len(code) == 6)
    )


def _edited_paths(obs: TurnObservation) -> set[str] | None:
    """Paths the turn's file tools wrote, or None when an edit came from elsewhere (run)."""
    paths = set()
    for call in obs.tool_calls:
        if call.name in EDIT_TOOLS and call.ok and not call.blocked:
            path = call.arguments.get("path")
            if isinstance(path, str) and path:
                paths.add(path.removeprefix("./"))
    return paths or None


class BuildDiagnosticsDetector:
    """A :class:`StuckDetector` over the diagnostics feed (name ``build_diagnostics``).

    ``baseline`` is the snapshot taken before the first edit (when the loop has one);
    ``targets`` are the diagnostics the run was asked to fix; ``reappear`` is how many
    comebacks of one fixed error make an oscillation.
    """

    def __init__(
        self,
        k: int = 3,
        *,
        baseline: DiagnosticsSnapshot | None = None,
        targets: Sequence[DiagnosticItem] = (),
        reappear: int = 1,
    ) -> None:
        if k < 1 or reappear < 1:
            raise ValueError("k and reappear must be at least 1")
        self._k = k
        self._reappear = reappear
        self._targets = tuple(targets)
        self._prev = baseline
        self._baseline: set[ItemKey] | None = (
            {item_key(i) for i in _errors(baseline)} if baseline is not None else None
        )
        self._stall = 0
        self._worse: list[int] = []
        self._gone: dict[ItemKey, int] = {}
        self._comebacks: dict[ItemKey, int] = {}

    @property
    def name(self) -> str:
        return "build_diagnostics"

    def set_baseline(self, snapshot: DiagnosticsSnapshot) -> None:
        """Give the pre-edit snapshot when it is taken after construction.

        Ignored once an edit turn has been observed (the run already has a reference)."""
        if self._prev is None:
            self._prev = snapshot
            self._baseline = {item_key(i) for i in _errors(snapshot)}

    @property
    def k(self) -> int:
        return self._k

    def observe(self, obs: TurnObservation) -> StuckVerdict | None:
        snap = obs.diagnostics
        if not obs.edited or snap is None:
            return None
        errors = _errors(snap)
        if self._baseline is None:
            self._baseline = {item_key(i) for i in errors}
        prev = self._prev
        self._prev = snap
        if prev is None:
            self._worse = [len(errors)]
            return None
        verdict = self._oscillation(obs.turn, prev, errors)
        verdict = verdict or self._worsening(errors, len(_errors(prev)), obs.turn)
        verdict = verdict or self._stalled(obs, prev, snap, errors)
        return verdict

    def _oscillation(
        self, turn: int, prev: DiagnosticsSnapshot, errors: list[DiagnosticItem]
    ) -> StuckVerdict | None:
        now = {item_key(i): i for i in errors}
        back = [now[k] for k in now if k in self._gone]
        for item in back:
            key = item_key(item)
            self._comebacks[key] = self._comebacks.get(key, 0) + 1
            del self._gone[key]
        if not any(_is_syntax(i) for i in errors):
            for item in _errors(prev):
                key = item_key(item)
                if key not in now:
                    self._gone.setdefault(key, turn)
        hit = [i for i in back if self._comebacks.get(item_key(i), 0) >= self._reappear]
        if not hit:
            return None
        for item in hit:
            self._comebacks.pop(item_key(item), None)
        self._stall = 0
        self._worse = [len(errors)]
        return self._verdict(
            f"oscillation: {count(len(hit), 'error')} fixed by an earlier edit came back "
            f"at turn {turn}",
            hit,
        )

    def _verdict(self, detail: str, items: list[DiagnosticItem]) -> StuckVerdict:
        """This detector's verdict, with the first few ``items`` as evidence."""
        return StuckVerdict(
            detector=self.name,
            detail=detail,
            evidence=tuple(format_item(i) for i in items[:_EVIDENCE]),
        )

    def _worsening(
        self, errors: list[DiagnosticItem], before: int, turn: int
    ) -> StuckVerdict | None:
        if len(errors) > before:
            if not self._worse:
                self._worse = [before]
            self._worse.append(len(errors))
        else:
            self._worse = [len(errors)]
        if len(self._worse) <= self._k:
            return None
        counts = " → ".join(str(n) for n in self._worse)
        self._worse = [len(errors)]
        self._stall = 0
        return self._verdict(
            f"worse: errors rose on {self._k} edit turns in a row ({counts}) up to turn {turn}",
            errors,
        )

    def _stalled(
        self,
        obs: TurnObservation,
        prev: DiagnosticsSnapshot,
        snap: DiagnosticsSnapshot,
        errors: list[DiagnosticItem],
    ) -> StuckVerdict | None:
        if (
            snap.fingerprint != prev.fingerprint
            or not errors
            or not self._in_play(obs, snap, errors)
        ):
            self._stall = 0
            return None
        self._stall += 1
        if self._stall < self._k:
            return None
        self._stall = 0
        return self._verdict(
            (
                f"no improvement: the same {count(len(errors), 'error')} after {self._k} edit "
                f"turns (fingerprint {snap.fingerprint}) up to turn {obs.turn}"
            ),
            errors,
        )

    def _in_play(
        self, obs: TurnObservation, snap: DiagnosticsSnapshot, errors: list[DiagnosticItem]
    ) -> bool:
        baseline = self._baseline or set()
        if any(item_key(i) not in baseline for i in errors):
            return True
        if self._targets and remaining_targets(snap, self._targets):
            return True
        edited = _edited_paths(obs)
        if edited is None:
            return True  # edited through `run`: we cannot tell where, so assume it matters
        return any(i.path in edited for i in errors)
