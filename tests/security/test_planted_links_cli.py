"""Planted links through the real front ends (issue 35 row 2): ``driveros commit-msg`` (plain,
and the installed hooks on ``git commit``), ``council``, ``issue-bot`` and ``corpus add`` in a
repository that committed ``.driveros -> outside`` or ``.driveros/corpus.jsonl -> outside``.
Everything outside stays byte for byte; the front end says why it wrote nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driveros.testing import ScriptedModelServer, Turn
from tests.dogfood._run import driveros, git_repo, model_env, run
from tests.security.test_planted_links import snapshot

PLANTS = [".driveros", ".driveros/corpus.jsonl"]
NO_MODEL = "http://127.0.0.1:9"


async def _hostile_repo(tmp_path: Path, planted: str) -> tuple[Path, Path]:
    """A repository whose last commit holds the link; ``outside`` holds its targets."""
    outside = tmp_path / "home"
    outside.mkdir()
    (outside / ".bashrc").write_text("alias ls='ls --color'\n")
    (outside / "corpus.jsonl").write_text("")
    repo = tmp_path / "repo"
    await git_repo(repo, {"app.py": "x = 1\n"})
    if planted == ".driveros":
        (repo / ".driveros").symlink_to(outside)
    else:
        (repo / ".driveros").mkdir()
        (repo / ".driveros" / "corpus.jsonl").symlink_to(outside / ".bashrc")
    env = model_env(NO_MODEL)
    await run("git", "add", "-A", cwd=repo, env=env)
    await run("git", "commit", "-qm", "planted", cwd=repo, env=env)
    (repo / "app.py").write_text("x = 2  # $(touch /tmp/pwned)\n")
    await run("git", "add", "app.py", cwd=repo, env=env)
    return repo, outside


@pytest.mark.parametrize("planted", PLANTS)
async def test_commit_msg_prints_the_message_and_refuses_the_link(
    tmp_path: Path, planted: str
) -> None:
    repo, outside = await _hostile_repo(tmp_path, planted)
    before = snapshot(outside)
    async with ScriptedModelServer([Turn(text="fix(app): set x to 2")]) as server:
        res = await driveros("commit-msg", cwd=repo, env=model_env(server.openai_base_url))
    assert res.returncode == 0, res.stderr
    assert res.stdout == "fix(app): set x to 2\n"
    assert "symbolic link" in res.stderr and "Traceback" not in res.stderr
    assert snapshot(outside) == before


@pytest.mark.parametrize("planted", PLANTS)
async def test_installed_hooks_commit_and_never_write_through_the_link(
    tmp_path: Path, planted: str
) -> None:
    repo, outside = await _hostile_repo(tmp_path, planted)
    before = snapshot(outside)
    async with ScriptedModelServer([Turn(text="fix(app): set x to 2")]) as server:
        env = model_env(server.openai_base_url, GIT_EDITOR="true")
        installed = await driveros("commit-msg", "--install-hook", cwd=repo, env=env)
        assert installed.returncode == 0, installed.stderr
        commit = await run("git", "commit", "-q", cwd=repo, env=env)
    assert commit.returncode == 0, commit.stderr
    log = await run("git", "log", "-1", "--format=%B", cwd=repo, env=env)
    assert log.stdout.strip() == "fix(app): set x to 2"  # the hook still proposed it
    assert "symbolic link" in commit.stderr and "Traceback" not in commit.stderr
    assert snapshot(outside) == before


async def test_hook_install_refuses_a_linked_hook_and_pending_file(tmp_path: Path) -> None:
    repo, outside = await _hostile_repo(tmp_path, ".driveros/corpus.jsonl")
    (repo / ".git" / "hooks").mkdir(exist_ok=True)
    (repo / ".git" / "hooks" / "post-commit").symlink_to(outside / ".bashrc")
    (repo / ".git" / "driveros-commit-msg.json").symlink_to(outside / "corpus.jsonl")
    before = snapshot(outside)
    env = model_env(NO_MODEL)
    for extra in ((), ("--force",)):
        res = await driveros("commit-msg", "--install-hook", *extra, cwd=repo, env=env)
        assert res.returncode == 1 and "symbolic link" in res.stderr, res.stderr
    async with ScriptedModelServer([Turn(text="fix(app): set x to 2")]) as server:
        env = model_env(server.openai_base_url)
        res = await driveros("commit-msg", "--corpus", str(tmp_path / "c.jsonl"), cwd=repo, env=env)
    assert res.returncode == 0 and res.stdout == "fix(app): set x to 2\n", res.stderr
    assert "symbolic link" in res.stderr
    assert snapshot(outside) == before


@pytest.mark.parametrize("planted", PLANTS)
async def test_council_review_keeps_its_verdict_and_refuses_the_link(
    tmp_path: Path, planted: str
) -> None:
    repo, outside = await _hostile_repo(tmp_path, planted)
    before = snapshot(outside)
    critic = {"summary": "fine", "issues": []}
    verdict = {"verdict": "approve", "summary": "ok", "issues": []}
    turns = [Turn(text=json.dumps(critic)), Turn(text=json.dumps(verdict))]
    async with ScriptedModelServer(turns) as server:
        res = await driveros(
            "council", "review", "--staged", "--critic", "openai", "--referee", "openai",
            cwd=repo, env=model_env(server.openai_base_url),
        )  # fmt: skip
    assert res.returncode == 0, res.stderr  # the verdict stands; only the record is refused
    assert "not recorded" in res.stderr and "symbolic link" in res.stderr
    assert "Traceback" not in res.stderr
    assert res.stdout.startswith("verdict: approve")
    assert snapshot(outside) == before


@pytest.mark.parametrize("planted", PLANTS)
async def test_corpus_add_refuses_the_link(tmp_path: Path, planted: str) -> None:
    repo, outside = await _hostile_repo(tmp_path, planted)
    before = snapshot(outside)
    res = await driveros(
        "corpus", "add", "--kind", "council", "--input", "$(touch /tmp/pwned)", "--output", "o",
        cwd=repo, env=model_env(NO_MODEL),
    )  # fmt: skip
    assert res.returncode == 1 and "symbolic link" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""
    assert snapshot(outside) == before


@pytest.mark.parametrize("planted", PLANTS)
async def test_issue_bot_refuses_the_link_for_its_outputs_and_the_corpus(
    tmp_path: Path, planted: str
) -> None:
    repo, outside = await _hostile_repo(tmp_path, planted)
    (tmp_path / "issue.md").write_text("# nothing\n\nnothing to do\n")
    before = snapshot(outside)
    async with ScriptedModelServer([Turn(text="Nothing needed changing.")]) as server:
        res = await driveros(
            "issue-bot", str(tmp_path / "issue.md"),
            cwd=repo, env=model_env(server.openai_base_url),
        )  # fmt: skip
    assert "Traceback" not in res.stderr
    if planted == ".driveros":  # the default --out .driveros/issue-bot is under the link
        assert res.returncode == 1 and "symbolic link" in res.stderr, res.stderr
    else:
        assert res.returncode == 2, res.stderr  # unverified: no tool observed anything
        assert (repo / ".driveros" / "issue-bot" / "summary.md").is_file()
        assert "not recorded to the corpus" in res.stderr and "symbolic link" in res.stderr
    assert snapshot(outside) == before


async def test_eval_run_refuses_a_linked_results_directory(tmp_path: Path) -> None:
    repo, outside = await _hostile_repo(tmp_path, ".driveros")
    before = snapshot(outside)
    res = await driveros(
        "eval", "run", "smoke", "--replay", cwd=repo, env=model_env(NO_MODEL)
    )  # fmt: skip
    assert res.returncode == 1 and "symbolic link" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    assert snapshot(outside) == before


@pytest.mark.parametrize("planted", ["results.json", "results.partial.jsonl", "events"])
async def test_eval_run_into_a_committed_directory_follows_none_of_its_links(
    tmp_path: Path, planted: str
) -> None:
    repo, outside = await _hostile_repo(tmp_path, ".driveros/corpus.jsonl")
    out = repo / "evals-out"
    out.mkdir()
    (out / planted).symlink_to(outside / ("" if planted == "events" else ".bashrc"))
    before = snapshot(outside)
    res = await driveros(
        "eval", "run", "smoke", "--replay", "--case", "greeting", "--out", "evals-out",
        cwd=repo, env=model_env(NO_MODEL),
    )  # fmt: skip
    assert res.returncode != 0 and "symbolic link" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    assert snapshot(outside) == before
