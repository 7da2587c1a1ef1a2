"""``driveros commit-msg`` against a scripted model and real git repositories and hooks."""

from __future__ import annotations

import json
from pathlib import Path

from tests.dogfood._run import driveros, git_repo, model_env, run

from driveros.testing import ScriptedModelServer, Turn


def _verdicts(corpus: Path) -> list[dict[str, object]]:
    ops = [json.loads(line) for line in corpus.read_text().splitlines()]
    return [op["verdict"] for op in ops if op["op"] == "verdict"]


async def test_commit_msg_prints_a_conventional_message_and_records_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    await git_repo(repo, {"app.py": "x = 1\n"})
    (repo / "app.py").write_text("x = 2\n")
    await run("git", "add", "app.py", cwd=repo, env=model_env("http://127.0.0.1:9"))
    turns = [Turn(text="Changed x"), Turn(text="```\nfix(app): set x to 2\n```")]
    async with ScriptedModelServer(turns) as server:
        res = await driveros("commit-msg", cwd=repo, env=model_env(server.openai_base_url))
        sent = list(server.requests)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "fix(app): set x to 2\n"
    assert "-x = 1" in json.dumps(sent[0]) and "+x = 2" in json.dumps(sent[0])
    corpus = repo / ".driveros" / "corpus.jsonl"
    record = json.loads(corpus.read_text().splitlines()[0])["record"]
    assert record["kind"] == "commit-msg" and record["output"] == "fix(app): set x to 2\n"
    assert (repo / ".git" / "driveros-commit-msg.json").is_file()


async def test_commit_msg_with_nothing_staged_is_a_clear_error(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    await git_repo(repo, {"a.txt": "a\n"})
    res = await driveros("commit-msg", cwd=repo, env=model_env("http://127.0.0.1:9"))
    assert res.returncode == 1
    assert "nothing is staged" in res.stderr and "Traceback" not in res.stderr


async def test_hooks_fill_the_message_and_record_accepted_then_edited(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    await git_repo(repo, {"a.txt": "a\n"})
    async with ScriptedModelServer(
        [Turn(text="docs: update a"), Turn(text="docs: update a again")]
    ) as server:
        env = model_env(server.openai_base_url, GIT_EDITOR="true")
        installed = await driveros("commit-msg", "--install-hook", cwd=repo, env=env)
        assert installed.returncode == 0, installed.stderr
        (repo / "a.txt").write_text("b\n")
        await run("git", "add", "a.txt", cwd=repo, env=env)
        commit = await run("git", "commit", "-q", cwd=repo, env=env)
        assert commit.returncode == 0, commit.stderr
        log = await run("git", "log", "-1", "--format=%B", cwd=repo, env=env)
        assert log.stdout.strip() == "docs: update a"
        # second commit: the user rewrites the proposed message in the editor
        editor = tmp_path / "editor.sh"
        editor.write_text('#!/bin/sh\nsed -i "1s/.*/docs: say it better/" "$1"\n')
        editor.chmod(0o755)
        (repo / "a.txt").write_text("c\n")
        await run("git", "add", "a.txt", cwd=repo, env=env)
        edited_env = {**env, "GIT_EDITOR": str(editor)}
        commit = await run("git", "commit", "-q", cwd=repo, env=edited_env)
        assert commit.returncode == 0, commit.stderr
    verdicts = _verdicts(repo / ".driveros" / "corpus.jsonl")
    assert [v["label"] for v in verdicts] == ["accepted", "edited"]
    assert verdicts[1]["edit"] == "docs: say it better\n"
    assert not (repo / ".git" / "driveros-commit-msg.json").exists()


async def test_hook_never_blocks_and_foreign_hooks_are_kept(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    await git_repo(repo, {"a.txt": "a\n"})
    env = {k: v for k, v in model_env("http://127.0.0.1:9").items() if k != "OPENAI_API_KEY"}
    msg = repo / "MSG"
    msg.write_text("# git's comments\n")
    (repo / "a.txt").write_text("b\n")
    await run("git", "add", "a.txt", cwd=repo, env=env)
    res = await driveros("commit-msg", "--hook", str(msg), cwd=repo, env=env)
    assert res.returncode == 0
    assert "no message proposed" in res.stderr
    assert msg.read_text() == "# git's comments\n"
    foreign = repo / ".git" / "hooks" / "post-commit"
    foreign.write_text("#!/bin/sh\necho mine\n")
    refused = await driveros("commit-msg", "--install-hook", cwd=repo, env=env)
    assert refused.returncode == 1 and "--force" in refused.stderr
    assert foreign.read_text() == "#!/bin/sh\necho mine\n"
    assert not (repo / ".git" / "hooks" / "prepare-commit-msg").exists()
