"""The dogfood regression scorer: the judge's agreement with human verdicts."""

from __future__ import annotations

import json
from pathlib import Path

from driveros.evals import Corpus, CorpusRecord, Verdict, judge_corpus, render_confusion
from driveros.llm import openaicompat
from driveros.testing import ScriptedError, ScriptedModelServer, Turn


def _judge(verdict: str) -> Turn:
    return Turn(text=json.dumps({"verdict": verdict, "reason": "because"}))


async def test_judge_agreement_and_confusion_matrix(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path / "c.jsonl")
    humans = ["accepted", "accepted", "edited", "rejected"]
    for i, label in enumerate(humans):
        record = await corpus.add(CorpusRecord(kind="commit-msg", input=f"d{i}", output=f"m{i}"))
        edit = "better" if label == "edited" else None
        await corpus.set_verdict(record.id, Verdict(label=label, edit=edit))  # type: ignore[arg-type]
    await corpus.add(CorpusRecord(kind="council", input="x", output="y"))  # no verdict: skipped
    turns = [
        _judge("accepted"),
        _judge("edited"),
        _judge("edited"),
        Turn(error=ScriptedError(status=400, message="context too long")),
    ]
    async with ScriptedModelServer(turns) as server:
        judge = openaicompat.openai("judge", base_url=server.openai_base_url, api_key="k")
        try:
            agreement = await judge_corpus(await corpus.records(), judge, concurrency=1)
        finally:
            await judge.aclose()
    assert agreement.total == 4
    assert agreement.judged == 3 and agreement.agreed == 2
    assert agreement.rate == 2 / 3
    assert agreement.confusion["accepted"] == {"accepted": 1, "edited": 1, "rejected": 0}
    assert agreement.confusion["edited"]["edited"] == 1
    failed = [r for r in agreement.records if r.error]
    assert len(failed) == 1 and "context too long" in (failed[0].error or "")
    table = render_confusion(agreement)
    assert "agreement 67% (2/3 judged, 1 judge errors)" in table
