"""The regression scorer of the dogfood corpus: replay every record that has a human verdict
through a judge model and measure how often the judge agrees with the people.

A prompt or model change that makes the judge disagree with people shows up as a drop in
agreement and in the confusion matrix (rows: human verdict, columns: judge verdict).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from driveros._errors import DriverosError
from driveros.council import extract_json_object
from driveros.evals._corpus import VERDICT_LABELS, CorpusRecord
from driveros.llm import Provider, Request, system, user

JUDGE_PROMPT = """You predict how a careful senior engineer reviewed an AI tool's output.
"accepted": used as is; "edited": kept after changes; "rejected": thrown away.
Reply with one JSON object and nothing else: {"verdict": "accepted|edited|rejected",
"reason": "<one sentence>"}"""


class JudgedRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    kind: str
    human: str
    judge: str | None
    reason: str = ""
    error: str | None = None


class Agreement(BaseModel):
    model_config = ConfigDict(frozen=True)

    total: int
    judged: int
    agreed: int
    rate: float | None
    #: confusion[human][judge] = count
    confusion: dict[str, dict[str, int]]
    records: tuple[JudgedRecord, ...]


async def _judge_one(
    record: CorpusRecord, judge: Provider, gate: asyncio.Semaphore
) -> JudgedRecord:
    assert record.verdict is not None
    prompt = (
        f"Kind of output: {record.kind}\n\nInput:\n{record.input[:6000]}\n\n"
        f"Output:\n{record.output[:6000]}"
    )
    async with gate:
        try:
            response = await judge.generate(
                Request(messages=[system(JUDGE_PROMPT), user(prompt)], max_tokens=300)
            )
            data = extract_json_object(response.text())
        except DriverosError as exc:
            return JudgedRecord(
                id=record.id,
                kind=record.kind,
                human=record.verdict.label,
                judge=None,
                error=str(exc),
            )
    verdict = str(data.get("verdict", "")).strip().lower()
    return JudgedRecord(
        id=record.id,
        kind=record.kind,
        human=record.verdict.label,
        judge=verdict if verdict in VERDICT_LABELS else None,
        reason=str(data.get("reason", "")),
        error=None if verdict in VERDICT_LABELS else f"invalid verdict {verdict!r}",
    )


async def judge_corpus(
    records: Sequence[CorpusRecord], judge: Provider, *, concurrency: int = 4
) -> Agreement:
    """Judge every record that has a human verdict; records without one are skipped."""
    judged_input = [r for r in records if r.verdict is not None]
    gate = asyncio.Semaphore(max(1, concurrency))
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(_judge_one(r, judge, gate)) for r in judged_input]
    results = tuple(t.result() for t in tasks)
    confusion: dict[str, dict[str, int]] = {
        h: dict.fromkeys(VERDICT_LABELS, 0) for h in VERDICT_LABELS
    }
    agreed = 0
    judged = 0
    for r in results:
        if r.judge is None:
            continue
        judged += 1
        confusion[r.human][r.judge] += 1
        agreed += r.human == r.judge
    return Agreement(
        total=len(results),
        judged=judged,
        agreed=agreed,
        rate=(agreed / judged) if judged else None,
        confusion=confusion,
        records=results,
    )


def render_confusion(agreement: Agreement) -> str:
    head = "human \\ judge".ljust(16) + "".join(label.rjust(10) for label in VERDICT_LABELS)
    rows = [head]
    for human in VERDICT_LABELS:
        cells = "".join(str(agreement.confusion[human][j]).rjust(10) for j in VERDICT_LABELS)
        rows.append(human.ljust(16) + cells)
    rate = "n/a" if agreement.rate is None else f"{agreement.rate:.0%}"
    rows.append(
        f"agreement {rate} ({agreement.agreed}/{agreement.judged} judged, "
        f"{agreement.total - agreement.judged} judge errors)"
    )
    return "\n".join(rows)
