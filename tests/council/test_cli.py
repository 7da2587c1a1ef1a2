"""``driveros council`` and ``driveros corpus`` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.dogfood._run import driveros, model_env

from driveros.testing import ScriptedError, ScriptedModelServer, Turn

VERDICT = {
    "verdict": "revise",
    "summary": "bound is off",
    "issues": [{"severity": "major", "description": "off by one", "evidence": "n+1"}],
}


async def test_council_review_prints_verdict_records_and_checks(tmp_path: Path) -> None:
    (tmp_path / "change.diff").write_text("-for i in range(n):\n+for i in range(n+1):\n")
    corpus = tmp_path / "corpus.jsonl"
    critic = {"summary": "one issue", "issues": [{"severity": "major", "description": "off"}]}
    turns = [Turn(text=json.dumps(critic)), Turn(text=json.dumps(VERDICT))]
    async with ScriptedModelServer(turns) as server:
        res = await driveros(
            "council",
            "--corpus",
            str(corpus),
            "review",
            "change.diff",
            "--critic",
            "openai",
            "--referee",
            "openai",
            "--check",
            cwd=tmp_path,
            env=model_env(server.openai_base_url),
        )
    assert res.returncode == 2, res.stderr  # --check: anything but approve
    assert res.stdout.startswith("verdict: revise (referee openai:scripted-model)")
    assert "- [major] off by one" in res.stdout
    record = json.loads(corpus.read_text().splitlines()[0])["record"]
    assert record["kind"] == "council" and json.loads(record["output"])["verdict"] == "revise"


async def test_council_infrastructure_error_exits_5_without_a_verdict(tmp_path: Path) -> None:
    (tmp_path / "a.diff").write_text("+x\n")
    turns = [Turn(error=ScriptedError(status=401, message="invalid key"))]
    async with ScriptedModelServer(turns) as server:
        res = await driveros(
            "council",
            "--no-record",
            "review",
            "a.diff",
            "--critic",
            "openai",
            cwd=tmp_path,
            env=model_env(server.openai_base_url),
        )
    assert res.returncode == 5
    assert res.stdout == ""
    assert "critic openai:scripted-model failed" in res.stderr and "Traceback" not in res.stderr


async def test_council_consult_from_stdin(tmp_path: Path) -> None:
    synthesis = {
        "synthesis": "Use a queue.",
        "agreements": ["both prefer queues"],
        "disagreements": [],
    }
    turns = [Turn(text="A queue."), Turn(text=json.dumps(synthesis))]
    async with ScriptedModelServer(turns) as server:
        res = await driveros(
            "council",
            "--no-record",
            "consult",
            "-",
            "--member",
            "openai",
            "--referee",
            "openai",
            cwd=tmp_path,
            env=model_env(server.openai_base_url),
            stdin="How to share work?",
        )
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("Use a queue.\n")
    assert "- both prefer queues" in res.stdout


async def test_corpus_cli_add_verdict_stats_list(tmp_path: Path) -> None:
    env = model_env("http://127.0.0.1:9")
    corpus = str(tmp_path / "c.jsonl")
    added = await driveros(
        "corpus",
        "--corpus",
        corpus,
        "add",
        "--kind",
        "commit-msg",
        "--input",
        "diff",
        "--output",
        "feat: x",
        cwd=tmp_path,
        env=env,
    )
    assert added.returncode == 0, added.stderr
    record_id = added.stdout.strip()
    (tmp_path / "final.txt").write_text("feat: better x\n")
    judged = await driveros(
        "corpus",
        "--corpus",
        corpus,
        "verdict",
        record_id,
        "edited",
        "--edit",
        "@final.txt",
        cwd=tmp_path,
        env=env,
    )
    assert judged.returncode == 0 and judged.stdout == f"{record_id} edited\n"
    stats = await driveros(
        "corpus", "--corpus", corpus, "stats", "--format", "json", cwd=tmp_path, env=env
    )
    assert json.loads(stats.stdout)["by_verdict"] == {"accepted": 0, "edited": 1, "rejected": 0}
    listed = await driveros("corpus", "--corpus", corpus, "list", cwd=tmp_path, env=env)
    assert listed.stdout.startswith(f"{record_id}  commit-msg edited")
    bad = await driveros(
        "corpus", "--corpus", corpus, "verdict", record_id, "edited", cwd=tmp_path, env=env
    )
    assert bad.returncode == 1 and "needs the edited text" in bad.stderr
