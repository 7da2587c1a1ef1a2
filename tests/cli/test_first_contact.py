"""Issue 16, first contact: no tracebacks, one meaning per flag, a result on every path."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from tests._scripted import FIX_CALC

from driveros.agent import EVENT_TYPES, event_adapter
from driveros.cli._main import main
from driveros.config import KEY_VARS, MODEL_VARS, URL_VARS
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from .conftest import DRIVEROS, cli_environ, run_cli

Cap = pytest.CaptureFixture[str]


@pytest.fixture
def no_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory without ``.env`` and an environment without any provider."""
    for table in (KEY_VARS, MODEL_VARS, URL_VARS):
        for var in table.values():
            if var:
                monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def call(capsys: Cap, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return code, out, err


def only_result(out: str) -> dict[str, object]:
    """stdout holds exactly one result object."""
    lines = out.splitlines()
    assert len(lines) == 1, out
    result = json.loads(lines[0])
    assert result["type"] == "result"
    return dict(result)


# ---------------------------------------------------------------- undecodable text


def test_cli_undecodable_task_reaches_json_stdout(calc_repo: Path) -> None:
    async def go() -> subprocess.CompletedProcess[bytes]:
        async with ScriptedModelServer([Turn(text="done")]) as server:
            return await asyncio.to_thread(
                subprocess.run,
                [os.fsencode(DRIVEROS), b"agent", b"--task", b"fix \xff", b"--format", b"ndjson"],
                env=cli_environ(server),
                cwd=calc_repo,
                capture_output=True,
                stdin=subprocess.DEVNULL,
                check=False,
            )

    proc = asyncio.run(go())
    assert b"Traceback" not in proc.stderr, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[0]["task"] == "fix \\xff"  # the byte, shown escaped
    assert events[-1]["type"] == "result"
    assert events[-1]["exit_code"] == proc.returncode == 2


async def test_cli_undecodable_task_on_stdin_is_shown_escaped(calc_repo: Path) -> None:
    async with ScriptedModelServer([Turn(text="done")]) as server:
        proc = await asyncio.create_subprocess_exec(
            str(DRIVEROS), "agent", "--task", "-", "--format", "ndjson",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=cli_environ(server), cwd=calc_repo,
        )  # fmt: skip
        out, err = await proc.communicate(b"fix \xff\xfe caf\xc3\xa9\n")
    assert b"Traceback" not in err, err
    events = [json.loads(line) for line in out.splitlines()]
    assert events[0]["task"] == "fix \\xff\\xfe café\n"
    assert events[-1]["exit_code"] == proc.returncode == 2


async def test_cli_lone_surrogate_in_tool_arguments_ends_with_a_result(calc_repo: Path) -> None:
    raw = '{"path": "dir/bad\\udcffname.txt"}'  # the JSON escape of a lone surrogate
    turns = [Turn(tool_calls=[ToolCallSpec("read_file", raw)]), Turn(text="no such file")]
    async with ScriptedModelServer(turns) as server:
        run = await run_cli("--task", "read it", "--format", "ndjson", server=server, cwd=calc_repo)
    assert "Traceback" not in run.stderr, run.stderr
    events = [event_adapter().validate_json(line) for line in run.stdout.splitlines()]
    assert {e.type for e in events} <= set(EVENT_TYPES)
    call_event = next(e for e in events if e.type == "tool_call")
    assert call_event.arguments == {"path": "dir/bad\\xffname.txt"}
    tool_result = next(e for e in events if e.type == "tool_result")
    assert not tool_result.ok
    assert events[-1].type == "result" and events[-1].exit_code == run.code


def test_event_with_lone_surrogates_serializes() -> None:
    from driveros.agent import Proposal, ProposalFile, ToolCall

    call_event = ToolCall(
        run_id="r", turn=1, call_id="c", name="read_file", arguments={"p\ud800": ["a\udcff"]}
    )
    assert json.loads(call_event.model_dump_json())["arguments"] == {"p\\ud800": ["a\\xff"]}
    proposal = Proposal(run_id="r", files=[ProposalFile(path="bad\udc80.txt", diff="+\udcff")])
    assert json.loads(proposal.model_dump_json())["files"][0]["path"] == "bad\\x80.txt"


# ---------------------------------------------------------------- flag values


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0", "soon"])
def test_cli_max_wall_refuses_what_is_not_a_finite_positive_time(
    capsys: Cap, no_provider: Path, value: str
) -> None:
    code, out, err = call(capsys, "agent", "--task", "x", "--max-wall", value, "--format", "json")
    assert code == 1
    assert "argument --max-wall:" in err and "usage: driveros agent" in err
    assert only_result(out)["exit_code"] == 1


def test_cli_closed_stdin_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(DRIVEROS), "agent", "--task", "-", "--format", "json"],
        env=cli_environ(None),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.close(0),
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "stdin is closed" in proc.stderr
    assert only_result(proc.stdout)["outcome"] == "setup_error"


@pytest.mark.parametrize("value", ["0", "-3", "x"])
def test_cli_issue_bot_max_iterations_must_be_positive(capsys: Cap, value: str) -> None:
    code, _, err = call(capsys, "issue-bot", "--max-iterations", value, "issue.md")
    assert code == 1 and "argument --max-iterations:" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["--concurrency", "0"],
        ["--concurrency", "-3"],
        ["--retries", "-1"],
        ["--retries", "two"],
    ],
)
def test_cli_eval_run_refuses_meaningless_counts(capsys: Cap, argv: list[str]) -> None:
    code, _, err = call(capsys, "eval", "run", "smoke", *argv)
    assert code == 1 and f"argument {argv[0]}:" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["agent", "--max-iterations", "x"],
        ["agent", "--max-wall", "x"],
        ["issue-bot", "--max-iterations", "x"],
        ["eval", "run", "smoke", "--concurrency", "x"],
        ["council", "review", "--rounds", "x"],
        ["playground", "--max-tokens", "x"],
        ["memory", "list", "--limit", "x"],
    ],
)
def test_cli_argument_errors_never_name_a_python_type(capsys: Cap, argv: list[str]) -> None:
    code, _, err = call(capsys, *argv)
    assert code == 1
    assert not re.search(r"invalid \S+ value", err), err
    assert "_int" not in err and "_float" not in err


# ---------------------------------------------------------------- usage errors


async def test_cli_review_action_without_review_is_a_usage_error(calc_repo: Path) -> None:
    turns = [Turn(tool_calls=[FIX_CALC]), Turn(text="fixed")]
    async with ScriptedModelServer(turns) as server:
        run = await run_cli(
            "--task", "fix", "--review-action", "discard", "--format", "json",
            server=server, cwd=calc_repo,
        )  # fmt: skip
        assert server.requests == []  # nothing ran
    assert run.code == 1
    assert "--review-action needs --review" in run.stderr
    assert only_result(run.stdout)["exit_code"] == 1
    assert (calc_repo / "calc.py").read_text().endswith("a - b\n")  # the tree is untouched


def test_cli_bogus_flag_shows_the_subcommand_usage(capsys: Cap) -> None:
    code, _, err = call(capsys, "agent", "--bogus")
    assert code == 1
    assert err.startswith("usage: driveros agent ")
    assert "driveros agent: error: unrecognized arguments: --bogus" in err
    code, _, err = call(capsys, "council", "review", "--bogus")
    assert code == 1 and err.startswith("usage: driveros council review ")


@pytest.mark.parametrize(
    "argv",
    [
        ["agent", "--format", "json"],  # no --task
        ["agent", "--task", "   ", "--format", "json"],
        ["agent", "--task", "x", "--bogus", "--format", "json"],
        ["agent", "--task", "x", "--council", "--format=json"],
        ["agent", "--task", "x", "--workspace", "/nonexistent/dir", "--format", "json"],
        ["agent", "--task", "x", "--format", "json"],  # no provider configured
        ["agent", "--task", "x", "--bogus", "--format", "ndjson"],
        ["agent", "--task", "x", "--provider", "nope", "--format", "json"],
        ["eval", "run", "smoke", "--concurrency", "0", "--format", "json"],
        ["memory", "show", "nope", "--format", "json"],
    ],
)
def test_cli_every_failure_prints_a_result_object_with_the_exit_status(
    capsys: Cap, no_provider: Path, argv: list[str]
) -> None:
    code, out, err = call(capsys, *argv)
    result = only_result(out)
    assert code == result["exit_code"] == 1
    assert result["outcome"] == "setup_error"
    assert isinstance(result["error"], str) and result["error"] in err


async def test_cli_review_prompt_without_a_terminal_prints_a_result(calc_repo: Path) -> None:
    async with ScriptedModelServer([Turn(text="x")]) as server:
        run = await run_cli(
            "--task", "t", "--review", "--format", "json", server=server, cwd=calc_repo
        )
    assert run.code == 1
    assert "needs a terminal" in only_result(run.stdout)["error"]  # type: ignore[operator]


def test_cli_error_lines_say_driveros_once_and_the_missing_key_once(
    capsys: Cap, no_provider: Path
) -> None:
    code, out, err = call(capsys, "agent", "--task", "x")
    assert code == 1 and out.splitlines()[-1].startswith("SUMMARY outcome=setup_error exit=1")
    assert "driveros: driveros" not in err
    assert err.count("no model provider is configured") == 1
    code, _, err = call(capsys, "agent", "--task", "x", "--council")
    assert err.strip().splitlines()[-1] == "driveros agent: error: --council needs --review"


# ---------------------------------------------------------------- one exit code per meaning


def test_cli_council_review_without_a_provider_is_a_setup_error(
    capsys: Cap, no_provider: Path
) -> None:
    (no_provider / "change.diff").write_text("+x\n")
    code, _, err = call(capsys, "council", "review", "change.diff", "--no-record")
    assert code == 1 and "no provider is configured" in err
    code, _, err = call(capsys, "council", "consult", "why?", "--no-record")
    assert code == 1 and "no provider is configured" in err


def test_cli_eval_run_without_a_key_fails_at_once(capsys: Cap, no_provider: Path) -> None:
    code, out, err = call(capsys, "eval", "run", "smoke", "--out", "o")
    assert code == 1 and "no model provider is configured" in err
    assert out == "" and not (no_provider / "o").exists()  # no case ran


# ---------------------------------------------------------------- one meaning per flag


@pytest.mark.parametrize(
    "argv",
    [
        ["agent", "--task", "x"],
        ["issue-bot", "issue.md"],
        ["eval", "run", "smoke"],
        ["commit-msg"],
        ["council", "review", "-"],
        ["council", "consult", "q"],
        ["playground"],
    ],
)
def test_cli_provider_means_name_and_optional_model_everywhere(
    capsys: Cap, argv: list[str]
) -> None:
    code, _, err = call(capsys, *argv, "--provider", "nope:model")
    assert code == 1
    assert re.search(r"argument --provider(/--member)?: unknown provider 'nope:model'; choose", err)
    code, _, err = call(capsys, *argv, "--provider", "openai:")
    assert code == 1 and "names no model after ':'" in err


async def test_cli_provider_with_a_model_suffix_picks_that_model(calc_repo: Path) -> None:
    async with ScriptedModelServer([Turn(text="ok")]) as server:
        run = await run_cli(
            "--task", "t", "--provider", "openai:gpt-scripted", "--format", "ndjson",
            server=server, cwd=calc_repo,
        )  # fmt: skip
        sent = server.requests[0]
    started = json.loads(run.stdout.splitlines()[0])
    assert (started["provider"], started["model"]) == ("openai", "gpt-scripted")
    assert sent["model"] == "gpt-scripted"


# ---------------------------------------------------------------- wording


def test_trace_counts_files_in_words() -> None:
    import io

    from driveros.agent import Proposal, ProposalFile
    from driveros.cli._output import TraceWriter

    for n, words in ((1, "1 file changed"), (2, "2 files changed")):
        out = io.StringIO()
        files = [ProposalFile(path=f"f{i}.py") for i in range(n)]
        TraceWriter(out).write(Proposal(run_id="r", files=files))
        assert out.getvalue() == f"  proposal: {words}\n"


# ---------------------------------------------------------------- odd standard streams


def _agent_proc(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None, closed: tuple[int, ...] = ()
) -> subprocess.CompletedProcess[bytes]:
    def close() -> None:
        for fd in closed:
            os.close(fd)

    return subprocess.run(
        [str(DRIVEROS), "agent", *args],
        env=cli_environ(None) | (env or {}),
        cwd=tmp_path,
        capture_output=True,
        preexec_fn=close,
        check=False,
    )


@pytest.mark.parametrize("closed", [(1,), (2,), (1, 2), (0, 1, 2)])
def test_cli_closed_standard_streams_keep_the_exit_status(
    tmp_path: Path, closed: tuple[int, ...]
) -> None:
    proc = _agent_proc(tmp_path, "--task", "x", "--format", "json", closed=closed)
    assert proc.returncode == 1  # no provider: a setup error, whatever the streams
    assert b"Traceback" not in proc.stderr and b"internal error" not in proc.stderr
    if 1 not in closed:
        assert json.loads(proc.stdout)["exit_code"] == 1


def test_cli_ascii_stdout_still_gets_valid_json(tmp_path: Path) -> None:
    task = "café … \U0001f600"
    proc = _agent_proc(
        tmp_path, "--task", task, "--format", "ndjson", env={"PYTHONIOENCODING": "ascii"}
    )
    assert b"Traceback" not in proc.stderr
    started, result = (json.loads(line) for line in proc.stdout.splitlines())
    assert started["task"] == task and result["exit_code"] == proc.returncode == 1


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["council", "review", "bad.md", "--no-record"], 1, "no provider is configured"),
        (["memory", "import", "bad.md"], 1, "is not a driveros memory export"),
        (["corpus", "add", "--kind", "council", "--input", "@bad.md", "--output", "x"], 0, ""),
        (["issue-bot", "bad.md", "--no-record"], 1, ""),
    ],
)
def test_cli_undecodable_input_files_are_read_not_fatal(
    capsys: Cap, no_provider: Path, argv: list[str], code: int, says: str
) -> None:
    (no_provider / "bad.md").write_bytes(b"# Title \xff\n\nbody \xfe\n")
    got, _, err = call(capsys, *argv)
    assert got == code and says in err and "internal error" not in err
    if argv[0] == "corpus":
        record = (no_provider / ".driveros" / "corpus.jsonl").read_text()
        assert "# Title \\\\xff" in record


@pytest.mark.parametrize(
    "argv",
    [
        ["corpus", "--corpus", "/proc/driveros-none/c.jsonl", "add", "--kind", "council",
         "--input", "a", "--output", "b"],
        ["memory", "export", "-o", "/proc/driveros-none/m.json"],
        ["eval", "compare", "/proc/driveros-none/a.json", "/dev/null/b.json"],
    ],
)  # fmt: skip
def test_cli_unwritable_or_missing_paths_are_setup_errors(
    capsys: Cap, no_provider: Path, argv: list[str]
) -> None:
    json_too = argv[0] != "corpus"  # corpus add has no --format
    code, out, err = call(capsys, *argv, *(["--format", "json"] if json_too else []))
    assert code == 1 and "internal error" not in err and "/proc/driveros-none" in err
    if json_too:
        assert only_result(out)["exit_code"] == 1
