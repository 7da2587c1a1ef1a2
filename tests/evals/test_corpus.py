"""The dogfood corpus: append-only JSONL with folded verdicts, safe under concurrent writers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from driveros.evals import Corpus, CorpusError, CorpusRecord, Verdict


async def test_corpus_add_verdict_stats_roundtrip(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path / "c.jsonl")
    a = await corpus.add(CorpusRecord(kind="commit-msg", input="diff A", output="feat: a"))
    b = await corpus.add(CorpusRecord(kind="council", input="diff B", output="{}", model="m"))
    await corpus.set_verdict(a.id, Verdict(label="edited", edit="feat: better a"))
    await corpus.set_verdict(a.id[:6], Verdict(label="accepted"))  # a later verdict wins
    records = {r.id: r for r in await corpus.records()}
    assert records[a.id].verdict is not None and records[a.id].verdict.label == "accepted"
    assert records[b.id].verdict is None
    stats = await corpus.stats()
    assert stats.total == 2 and stats.pending == 1
    assert stats.by_kind == {"commit-msg": 1, "council": 1}
    assert stats.by_verdict == {"accepted": 1, "edited": 0, "rejected": 0}
    assert stats.acceptance_rate == 1.0
    # history is kept: three operations after two adds, nothing rewritten
    lines = (tmp_path / "c.jsonl").read_text().splitlines()
    assert [json.loads(x)["op"] for x in lines] == ["add", "add", "verdict", "verdict"]


async def test_corpus_rejects_bad_verdicts_and_unknown_ids(tmp_path: Path) -> None:
    corpus = Corpus(tmp_path / "c.jsonl")
    rec = await corpus.add(CorpusRecord(kind="issue-bot", input="i", output="o"))
    with pytest.raises(CorpusError, match="needs the edited text"):
        await corpus.set_verdict(rec.id, Verdict(label="edited"))
    with pytest.raises(CorpusError, match="no corpus record"):
        await corpus.set_verdict("ffffffff", Verdict(label="accepted"))


async def test_corpus_skips_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    corpus = Corpus(path)
    await corpus.add(CorpusRecord(kind="council", input="x", output="y"))
    with path.open("a") as fh:
        fh.write('{"op": "add", "record": {"kind": "coun')  # a crash mid-write
    assert len(await corpus.records()) == 1


_WRITER = """
import asyncio, sys
from pathlib import Path
from driveros.evals import Corpus, CorpusRecord
async def main():
    c = Corpus(Path(sys.argv[1]))
    for i in range(40):
        await c.add(CorpusRecord(kind="council", input=sys.argv[2] + str(i), output="o" * 3000))
asyncio.run(main())
"""


def test_corpus_concurrent_writer_processes_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), f"w{n}-"]) for n in range(4)
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    lines = path.read_text().splitlines()
    assert len(lines) == 160
    inputs = {json.loads(line)["record"]["input"] for line in lines}
    assert len(inputs) == 160
