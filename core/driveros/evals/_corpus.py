"""The dogfood corpus: real runs of the council, ``commit-msg`` and ``issue-bot`` with the
human verdict on each (accepted / edited / rejected, with the edit).

Storage is an append-only JSONL file. Each line is an operation: ``{"op": "add", "record":
{...}}`` or ``{"op": "verdict", "id": ..., "verdict": {...}}``; loading folds them, so a
verdict never rewrites history and a crash mid-write loses at most the line being written
(a torn last line is skipped with a warning). Appends take an exclusive ``flock``. Inside a
workspace the file and its directories are reached without following links
(:mod:`driveros._safe_open`): a committed ``.driveros/corpus.jsonl -> ~/.bashrc`` is refused.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from driveros._errors import DriverosError
from driveros._safe_open import anchor, append, read_bytes
from driveros.agent import Redactor

log = logging.getLogger(__name__)

RecordKind = Literal["council", "commit-msg", "issue-bot"]
VerdictLabel = Literal["accepted", "edited", "rejected"]
VERDICT_LABELS: tuple[VerdictLabel, ...] = ("accepted", "edited", "rejected")


class CorpusError(DriverosError):
    """The corpus file could not be read or written, or an id is unknown."""


class Verdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    label: VerdictLabel
    #: The human's final text when the verdict is "edited".
    edit: str | None = None
    by: str = "human"
    at: float = Field(default_factory=time.time)
    note: str = ""


class CorpusRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    kind: RecordKind
    created: float = Field(default_factory=time.time)
    input: str
    output: str
    model: str = ""
    provider: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)
    verdict: Verdict | None = None


class CorpusStats(BaseModel):
    model_config = ConfigDict(frozen=True)

    total: int
    by_kind: dict[str, int]
    by_verdict: dict[str, int]
    pending: int
    acceptance_rate: float | None


class _AddOp(BaseModel):
    op: Literal["add"] = "add"
    record: CorpusRecord


class _VerdictOp(BaseModel):
    op: Literal["verdict"] = "verdict"
    id: str
    verdict: Verdict


def _append_line(root: Path, rel: PurePosixPath, line: str) -> None:
    if rel.parent == PurePosixPath("."):  # outside every workspace: the user's own directory
        root.mkdir(parents=True, exist_ok=True)
    append(root, rel, (line + "\n").encode("utf-8"), perms=0o644)


def _read_ops(root: Path, rel: PurePosixPath) -> list[_AddOp | _VerdictOp]:
    data = read_bytes(root, rel)
    if data is None:
        return []
    ops: list[_AddOp | _VerdictOp] = []
    shown = root / rel
    # Only "\n" ends a line: JSON keeps U+2028, U+0085 and the like raw inside strings.
    for number, line in enumerate(data.decode("utf-8", "replace").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            op = _VerdictOp.model_validate(raw) if raw.get("op") == "verdict" else None
            ops.append(op or _AddOp.model_validate(raw))
        except (ValueError, ValidationError, AttributeError) as exc:
            log.warning("corpus %s line %d skipped: %s", shown, number, exc)
    return ops


class Corpus:
    """A corpus file. Every method is async; file work runs off the event loop."""

    def __init__(
        self, path: Path, *, secrets: Iterable[str] = (), root: Path | None = None
    ) -> None:
        """``root``: the workspace holding ``path`` (default: the working directory, when it
        holds ``path``); below it no link is followed (:mod:`driveros._safe_open`)."""
        self.path = path
        self._where = anchor(path, *([root] if root is not None else []), Path.cwd())
        #: Known secret values and token shapes never reach the file (docs/evals.md).
        self._redactor = Redactor(secrets)

    def _clean(self, text: str) -> str:
        return self._redactor.text(text)

    async def add(self, record: CorpusRecord) -> CorpusRecord:
        record = record.model_copy(
            update={"input": self._clean(record.input), "output": self._clean(record.output)}
        )
        line = _AddOp(record=record).model_dump_json()
        await asyncio.to_thread(_append_line, *self._where, line)
        return record

    async def records(self) -> list[CorpusRecord]:
        return await asyncio.to_thread(self._fold)

    def _fold(self) -> list[CorpusRecord]:
        by_id: dict[str, CorpusRecord] = {}
        for op in _read_ops(*self._where):
            if isinstance(op, _AddOp):
                by_id[op.record.id] = op.record
            elif op.id in by_id:
                by_id[op.id] = by_id[op.id].model_copy(update={"verdict": op.verdict})
        return list(by_id.values())

    async def get(self, record_id: str) -> CorpusRecord:
        matches = [r for r in await self.records() if r.id.startswith(record_id)]
        if not matches:
            raise CorpusError(f"no corpus record with id {record_id!r}", id=record_id)
        if len(matches) > 1:
            raise CorpusError(f"id prefix {record_id!r} is ambiguous", id=record_id)
        return matches[0]

    async def set_verdict(self, record_id: str, verdict: Verdict) -> CorpusRecord:
        record = await self.get(record_id)
        if verdict.label == "edited" and not verdict.edit:
            raise CorpusError("an 'edited' verdict needs the edited text", id=record.id)
        verdict = verdict.model_copy(
            update={
                "edit": self._clean(verdict.edit) if verdict.edit else verdict.edit,
                "note": self._clean(verdict.note),
            }
        )
        line = _VerdictOp(id=record.id, verdict=verdict).model_dump_json()
        await asyncio.to_thread(_append_line, *self._where, line)
        return record.model_copy(update={"verdict": verdict})

    async def stats(self) -> CorpusStats:
        return corpus_stats(await self.records())


def corpus_stats(records: Iterable[CorpusRecord]) -> CorpusStats:
    items = list(records)
    kinds = Counter(r.kind for r in items)
    verdicts = Counter(r.verdict.label for r in items if r.verdict is not None)
    judged = sum(verdicts.values())
    return CorpusStats(
        total=len(items),
        by_kind=dict(sorted(kinds.items())),
        by_verdict={label: verdicts.get(label, 0) for label in VERDICT_LABELS},
        pending=len(items) - judged,
        acceptance_rate=(verdicts.get("accepted", 0) / judged) if judged else None,
    )
