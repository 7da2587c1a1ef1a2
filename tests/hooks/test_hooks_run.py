"""The user's hooks in a real run: a pre_tool hook blocks ``run`` with its reason reaching the
model, a hook that times out blocks too, a workspace's hooks count only once it is trusted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driveros.hooks import HookSpec, load_hooks, run_hook
from driveros.testing import ToolCallSpec, Turn
from tests.runs.conftest import run_scripted

RUN = ToolCallSpec("run", {"command": "echo hello > touched.txt"})


def _user_hooks(tmp_path: Path, toml: str) -> dict[str, str]:
    cfg = tmp_path / "cfg" / "driveros"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "hooks.toml").write_text(toml)
    return {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}


def _tool_messages(request: dict[str, object]) -> str:
    return json.dumps(request["messages"])


async def test_pre_tool_hook_exit_2_blocks_run_and_the_model_reads_why(
    calc_repo: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "seen.json"
    script = tmp_path / "deny.sh"
    script.write_text(f"#!/bin/sh\ncat > {seen}\necho 'no shell on Fridays' >&2\nexit 2\n")
    script.chmod(0o755)
    environ = _user_hooks(
        tmp_path, f'[[hooks]]\nevent = "pre_tool"\ntools = ["run"]\ncommand = "{script}"\n'
    )
    out = await run_scripted(
        [Turn(tool_calls=[RUN]), Turn(text="could not")],
        calc_repo,
        environ=environ,
        review=False,
    )
    assert not (calc_repo / "touched.txt").exists()
    (approval,) = out.of("approval")
    assert approval.decision == "blocked" and "no shell on Fridays" in approval.reason
    assert "no shell on Fridays" in _tool_messages(out.server.requests[1])
    payload = json.loads(seen.read_text())
    assert payload["event"] == "pre_tool" and payload["run_id"] == approval.run_id
    assert payload["tool"] == {"name": "run", "arguments": RUN.arguments}
    assert payload["workspace"] == str(calc_repo)


async def test_pre_tool_hook_that_times_out_blocks(calc_repo: Path, tmp_path: Path) -> None:
    environ = _user_hooks(
        tmp_path, '[[hooks]]\nevent = "pre_tool"\ncommand = "sleep 30"\ntimeout_s = 0.5\n'
    )
    out = await run_scripted(
        [Turn(tool_calls=[RUN]), Turn(text="could not")], calc_repo, environ=environ
    )
    assert not (calc_repo / "touched.txt").exists()
    (approval,) = out.of("approval")
    assert approval.decision == "blocked" and "timed out" in approval.reason
    assert "timed out" in _tool_messages(out.server.requests[1])


async def test_pre_tool_hook_for_other_tools_and_exit_0_allow(
    calc_repo: Path, tmp_path: Path
) -> None:
    environ = _user_hooks(
        tmp_path,
        '[[hooks]]\nevent = "pre_tool"\ntools = ["write_file"]\ncommand = "exit 2"\n'
        '[[hooks]]\nevent = "pre_tool"\ncommand = ["/bin/true"]\n',
    )
    out = await run_scripted(
        [Turn(tool_calls=[RUN]), Turn(text="done")],
        calc_repo,
        environ=environ,
        review=True,
    )
    assert out.report.scratch is not None
    await out.report.scratch.aclose()
    assert [a.decision for a in out.of("approval")] == ["allowed"]


async def test_workspace_hook_ignored_while_untrusted(calc_repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "workspace_hook_ran"
    (calc_repo / ".driveros").mkdir()
    (calc_repo / ".driveros" / "hooks.toml").write_text(
        f'[[hooks]]\nevent = "run_start"\ncommand = "touch {marker}"\n'
        '[[hooks]]\nevent = "pre_tool"\ncommand = "exit 2"\n'
    )
    out = await run_scripted(
        [Turn(tool_calls=[RUN]), Turn(text="done")],
        calc_repo,
        review=True,
        environ={"XDG_CONFIG_HOME": str(tmp_path / "none")},
    )
    assert out.report.scratch is not None
    await out.report.scratch.aclose()
    assert not marker.exists()
    assert [a.decision for a in out.of("approval")] == ["allowed"]
    # trusted, the same file's hooks run
    out = await run_scripted(
        [Turn(tool_calls=[RUN]), Turn(text="done")],
        calc_repo,
        review=True,
        workspace_trusted=True,
        environ={"XDG_CONFIG_HOME": str(tmp_path / "none")},
    )
    assert out.report.scratch is not None
    await out.report.scratch.aclose()
    assert marker.exists()
    assert [a.decision for a in out.of("approval")] == ["blocked"]


def test_load_hooks_reports_a_broken_file_and_an_ignored_workspace(tmp_path: Path) -> None:
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "hooks.toml").write_text('[[hooks]]\nevent = "bogus"\ncommand = "x"\n')
    (tmp_path / "ws" / ".driveros").mkdir(parents=True)
    (tmp_path / "ws" / ".driveros" / "hooks.toml").write_text("")
    found = load_hooks(tmp_path / "ws", user_dir=tmp_path / "cfg", trusted=False)
    assert found.hooks == ()
    assert any("not used" in n for n in found.notices)
    assert any("not trusted" in n for n in found.notices)


@pytest.mark.parametrize(
    ("command", "verdict"),
    [("exit 0", "allow"), ("echo why >&2; exit 2", "block"), ("exit 1", "warn")],
)
async def test_run_hook_exit_codes(tmp_path: Path, command: str, verdict: str) -> None:
    out = await run_hook(
        HookSpec(event="pre_tool", command=command), {"event": "pre_tool"}, cwd=str(tmp_path)
    )
    assert out.verdict == verdict
    if verdict == "block":
        assert out.reason == "why"


async def test_post_tool_and_run_end_hooks_get_the_redacted_events(
    calc_repo: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log.jsonl"
    append = f"cat >> {log}; echo >> {log}"
    environ = _user_hooks(
        tmp_path,
        f'[[hooks]]\nevent = "post_tool"\ntools = ["run"]\ncommand = "{append}"\n'
        f'[[hooks]]\nevent = "run_end"\ncommand = "{append}"\n',
    )
    out = await run_scripted(
        [
            Turn(tool_calls=[ToolCallSpec("run", {"command": "echo $OPENAI_API_KEY"})]),
            Turn(text="ok"),
        ],
        calc_repo,
        environ=environ,
        review=True,
    )
    assert out.report.scratch is not None
    await out.report.scratch.aclose()
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    assert [x["event"] for x in lines] == ["post_tool", "run_end"]
    assert lines[0]["tool"]["name"] == "run"
    assert lines[1]["data"]["outcome"] == out.report.result.outcome
    from tests.runs.conftest import SECRET

    assert SECRET not in log.read_text()
