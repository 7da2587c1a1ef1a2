"""Untrusted text reaching a terminal or a file a person reads is escaped (issue 35 row 5).

One helper, ``driveros._unicode.terminal_safe``: newlines and tabs kept, every other C0/C1
control, DEL, bidi override or isolate, line separator and tag character escaped, printable
text unchanged. A scripted model that answers with terminal escapes, an OSC 8 link, ``\\r``,
BEL, C1 CSI and bidi overrides is then run through every front end that shows its text:
``commit-msg`` (stdout, the hook's message file, the commit), ``council review|consult``,
``issue-bot`` (stderr and summary.md), ``corpus list`` and ``agent --format text``.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from driveros._unicode import json_terminal_safe, terminal_safe
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests.dogfood._run import driveros, git_repo, model_env, run

HOSTILE = (
    "\x1b[31mred\x1b[0m \x1b]8;;https://evil.example/\x07click\x1b]8;;\x07 "
    "over\rwritten\x07\x7f \x9b2J \u202egnp.exe\u202c \u2066iso\u2069 \u200fmark "
    "sep\u2028ara\u2029tor \U000e0041tag tab\there"
)
_BIDI = set("\u061c\u200e\u200f\u2028\u2029") | {chr(c) for c in range(0x202A, 0x202F)}
_BIDI |= {chr(c) for c in range(0x2066, 0x206A)}


def assert_clean(text: str) -> None:
    """No control a terminal acts on: only newline and tab among Cc, no bidi or separator."""
    bad = [
        ch
        for ch in text
        if (unicodedata.category(ch) == "Cc" and ch not in "\n\t")
        or ch in _BIDI
        or unicodedata.category(ch) == "Cs"
        or 0xE0000 <= ord(ch) <= 0xE007F
    ]
    assert bad == [], f"unescaped {bad!r} in {text!r}"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, categories=None), max_size=80))
def test_terminal_safe_leaves_no_control_but_newline_and_tab(text: str) -> None:
    safe = terminal_safe(text)
    assert_clean(safe)
    assert terminal_safe(safe) == safe  # a fixed point
    assert safe.count("\n") == text.replace("\r\n", "\n").count("\n")
    assert safe.count("\t") == text.count("\t")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Zl", "Zp"))))
def test_terminal_safe_keeps_printable_text_unchanged(text: str) -> None:
    text = text + "\n\tend"
    assert terminal_safe(text) is text or terminal_safe(text) == text


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(st.characters(codec=None)),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
        ),
        max_leaves=8,
    )
)
def test_json_terminal_safe_keeps_the_data_and_no_control(value: object) -> None:
    document = json.dumps(value, ensure_ascii=False)
    safe = json_terminal_safe(document)
    assert json.loads(safe) == value
    assert_clean(safe)


def test_terminal_safe_shows_what_it_escaped() -> None:
    assert terminal_safe("a\x1b[2Jb\r\nc\rd\u202ee") == "a\\x1b[2Jb\nc\\rd\\u202ee"
    assert terminal_safe("\x9b\x00\x7f") == "\\x9b\\x00\\x7f"
    assert "click" in terminal_safe(HOSTILE) and "tab\there" in terminal_safe(HOSTILE)


async def _staged_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    await git_repo(repo, {"app.py": "x = 1\n"})
    (repo / "app.py").write_text("x = 2\n")
    await run("git", "add", "app.py", cwd=repo, env=model_env("http://127.0.0.1:9"))
    return repo


async def test_commit_msg_output_and_commit_are_escaped(tmp_path: Path) -> None:
    repo = await _staged_repo(tmp_path)
    message = "fix(app): set x \x1b[31mred\x1b[0m\u202e\n\n" + HOSTILE
    async with ScriptedModelServer([Turn(text=message), Turn(text=message)]) as server:
        env = model_env(server.openai_base_url, GIT_EDITOR="true")
        plain = await driveros("commit-msg", "--no-record", cwd=repo, env=env)
        installed = await driveros("commit-msg", "--install-hook", cwd=repo, env=env)
        assert installed.returncode == 0, installed.stderr
        commit = await run("git", "commit", "-q", cwd=repo, env=env)
    assert plain.returncode == 0 and commit.returncode == 0, plain.stderr + commit.stderr
    assert plain.stdout.startswith("fix(app): set x \\x1b[31mred")
    assert_clean(plain.stdout)
    log = await run("git", "log", "-1", "--format=%B", cwd=repo, env=env)
    assert log.stdout.startswith("fix(app): set x \\x1b[31mred")
    assert_clean(log.stdout)
    assert_clean((repo / ".git" / "COMMIT_EDITMSG").read_text())
    corpus = (repo / ".driveros" / "corpus.jsonl").read_text()
    assert_clean(json.loads(corpus.splitlines()[0])["record"]["output"])


async def test_council_review_and_consult_text_are_escaped(tmp_path: Path) -> None:
    (tmp_path / "a.diff").write_text("+x\n")
    critic = {"summary": HOSTILE, "issues": [{"severity": "major", "description": HOSTILE}]}
    verdict = {
        "verdict": "revise",
        "summary": HOSTILE,
        "issues": [{"severity": "major", "description": HOSTILE, "evidence": HOSTILE}],
    }
    synthesis = {"synthesis": HOSTILE, "agreements": [HOSTILE], "disagreements": [HOSTILE]}
    turns = [
        Turn(text=json.dumps(critic)),
        Turn(text=json.dumps(verdict)),
        Turn(text=HOSTILE),
        Turn(text=json.dumps(synthesis)),
    ]
    async with ScriptedModelServer(turns) as server:
        env = model_env(server.openai_base_url)
        review = await driveros(
            "council", "--no-record", "review", "a.diff", "--critic", "openai",
            "--referee", "openai", cwd=tmp_path, env=env,
        )  # fmt: skip
        consult = await driveros(
            "council", "--no-record", "consult", "why?", "--member", "openai",
            "--referee", "openai", cwd=tmp_path, env=env,
        )  # fmt: skip
    assert review.returncode == 0 and consult.returncode == 0, review.stderr + consult.stderr
    assert review.stdout.count("\\x1b[31mred") == 3  # summary, description, evidence
    assert consult.stdout.count("\\u202egnp.exe") == 3
    for out in (review.stdout, review.stderr, consult.stdout, consult.stderr):
        assert_clean(out)


async def test_issue_bot_summary_and_trace_are_escaped(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    await git_repo(repo, {"a.txt": "a\n"})
    (tmp_path / "issue.md").write_text(f"# title {HOSTILE}\n\nbody {HOSTILE}\n")
    turns = [
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": "a.txt" + HOSTILE})]),
        Turn(text="Done. " + HOSTILE),
    ]
    async with ScriptedModelServer(turns) as server:
        res = await driveros(
            "issue-bot", str(tmp_path / "issue.md"), "--out", str(tmp_path / "out"),
            cwd=repo, env=model_env(server.openai_base_url),
        )  # fmt: skip
    assert res.returncode in (0, 2), res.stderr
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "Done. \\x1b[31mred" in summary and "# issue-bot: title \\x1b[31mred" in summary
    for text in (summary, res.stdout, res.stderr):
        assert_clean(text)


async def test_corpus_list_and_agent_text_answer_are_escaped(tmp_path: Path) -> None:
    env = model_env("http://127.0.0.1:9")
    corpus = str(tmp_path / "c.jsonl")
    added = await driveros(
        "corpus", "--corpus", corpus, "add", "--kind", "council", "--input", "i",
        "--output", HOSTILE, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    listed = await driveros("corpus", "--corpus", corpus, "list", cwd=tmp_path, env=env)
    assert listed.returncode == 0 and "\\x1b[31mred" in listed.stdout, listed.stderr
    assert_clean(listed.stdout)
    async with ScriptedModelServer([Turn(text=HOSTILE)]) as server:
        answered = await driveros(
            "agent", "--task", "say it", "--workspace", str(tmp_path), "--format", "text",
            "--no-memory", cwd=tmp_path, env=model_env(server.openai_base_url),
        )  # fmt: skip
    assert answered.stdout.startswith("\\x1b[31mred"), answered.stderr
    assert "tab\there" in answered.stdout
    assert_clean(answered.stdout)
    assert_clean(answered.stderr)


async def test_council_gate_verdict_on_stderr_is_escaped(tmp_path: Path) -> None:
    """``driveros agent --review --council``: the verdict printed before the change lands."""
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    edit = {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
    agent_turns = [Turn(tool_calls=[ToolCallSpec("edit_file", edit)]), Turn(text="done")]
    critic = {"summary": "checked", "issues": []}
    verdict = {
        "verdict": "approve",
        "summary": HOSTILE,
        "issues": [{"severity": "minor", "description": HOSTILE}],
    }
    council_turns = [Turn(text=json.dumps(critic)), Turn(text=json.dumps(verdict))]
    async with (
        ScriptedModelServer(agent_turns) as agent,
        ScriptedModelServer(council_turns) as council,
    ):
        env = model_env(
            agent.openai_base_url,
            ANTHROPIC_API_KEY="k2",
            ANTHROPIC_BASE_URL=council.anthropic_base_url,
            DRIVEROS_DIAGNOSTICS="off",
        )
        res = await driveros(
            "agent", "--task", "fix add", "--provider", "openai", "--review",
            "--review-action", "keep", "--council", "--format", "text", "--no-memory",
            cwd=tmp_path, env=env,
        )  # fmt: skip
    assert res.returncode == 2, res.stderr  # unverified: no tool observed the build
    assert res.stderr.count("\\x1b[31mred") == 2  # the summary and the issue
    assert_clean(res.stderr)
    assert_clean(res.stdout)


async def test_playground_table_is_escaped(tmp_path: Path) -> None:
    async with ScriptedModelServer([Turn(text=HOSTILE)]) as server:
        res = await driveros(
            "playground", "--prompt", "hi", "--no-ollama-probe",
            cwd=tmp_path, env=model_env(server.openai_base_url),
        )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "\\x1b[31mred" in res.stdout
    assert_clean(res.stdout)


async def test_a_committed_corpus_with_hostile_ids_is_shown_escaped(tmp_path: Path) -> None:
    """The corpus file is the repository's: its ids and texts are input, not output."""
    record = {"id": "ab\x1b]0;pwned\x07", "kind": "council", "input": "i", "output": HOSTILE}
    (tmp_path / "c.jsonl").write_text(json.dumps({"op": "add", "record": record}) + "\n")
    env = model_env("http://127.0.0.1:9")
    corpus = ("corpus", "--corpus", str(tmp_path / "c.jsonl"))
    listed = await driveros(*corpus, "list", cwd=tmp_path, env=env)
    judged = await driveros(*corpus, "verdict", "ab", "accepted", cwd=tmp_path, env=env)
    assert listed.returncode == 0 and judged.returncode == 0, listed.stderr + judged.stderr
    assert judged.stdout == "ab\\x1b]0;pwned\\x07 accepted\n"
    for out in (listed.stdout, judged.stdout):
        assert_clean(out)


async def test_json_outputs_keep_the_data_and_show_no_control(tmp_path: Path) -> None:
    """``--format json``: the model's text is the same data, every control a ``\\u`` escape."""
    (tmp_path / "a.diff").write_text("+x\n")
    critic = {"summary": "checked", "issues": []}
    verdict = {"verdict": "approve", "summary": HOSTILE, "issues": []}
    turns = [Turn(text=json.dumps(critic)), Turn(text=json.dumps(verdict))]
    async with ScriptedModelServer(turns) as server:
        env = model_env(server.openai_base_url)
        review = await driveros(
            "council", "--corpus", str(tmp_path / "c.jsonl"), "review", "a.diff",
            "--critic", "openai", "--referee", "openai", "--format", "json",
            cwd=tmp_path, env=env,
        )  # fmt: skip
        listed = await driveros(
            "corpus", "--corpus", str(tmp_path / "c.jsonl"), "list", "--format", "json",
            cwd=tmp_path, env=env,
        )  # fmt: skip
    assert review.returncode == 0 and listed.returncode == 0, review.stderr + listed.stderr
    assert json.loads(review.stdout)["summary"] == HOSTILE.replace("\r\n", "\n")
    assert json.loads(json.loads(listed.stdout)["output"])["summary"] == HOSTILE
    assert_clean(review.stdout)
    assert_clean(listed.stdout)
