"""A run's instruction files reach the model with provenance; AGENTS.md "checks" run only in a
trusted workspace, through approval."""

from __future__ import annotations

from pathlib import Path

from driveros.testing import ToolCallSpec, Turn

from .conftest import run_scripted


async def test_run_instruction_files_reach_the_first_request_with_provenance(
    calc_repo: Path, tmp_path: Path
) -> None:
    (calc_repo / "AGENTS.md").write_text("Root rule: tabs.\n")
    (calc_repo / "pkg").mkdir()
    (calc_repo / "pkg" / "AGENTS.md").write_text("Closer rule: spaces win here.\n")
    (calc_repo / "pkg" / "mod.py").write_text("x = 1\n")
    (tmp_path / "cfg" / "driveros").mkdir(parents=True)
    (tmp_path / "cfg" / "driveros" / "AGENTS.md").write_text("User rule: be brief.\n")
    out = await run_scripted(
        [Turn(text="done")],
        calc_repo,
        task="tidy pkg/mod.py",
        environ={"XDG_CONFIG_HOME": str(tmp_path / "cfg")},
    )
    system = out.server.requests[0]["messages"][0]
    assert system["role"] == "system"
    text = system["content"] if isinstance(system["content"], str) else str(system["content"])
    user_at = text.index('source="user"')
    root_at = text.index('<instructions source="repository" path="AGENTS.md">')
    closer_at = text.index('<instructions source="repository" path="pkg/AGENTS.md">')
    assert user_at < root_at < closer_at
    assert "Closer rule: spaces win here." in text and "User rule: be brief." in text
    assert "closer to the files of the task" in text
    (started,) = out.of("run_started")
    assert started.instructions[1:] == ["repository:AGENTS.md", "repository:pkg/AGENTS.md"]
    assert started.instructions[0].startswith("user:")
    # the user's task stays the user's words
    assert "Root rule" not in out.server.requests[0]["messages"][1]["content"]


DIAG = ToolCallSpec("diagnostics", {})
CHECKS = "# Agents\n\n## Checks\n\n```sh\ntouch agents_check_ran.txt\n```\n"


async def test_run_untrusted_agents_md_checks_run_nothing(calc_repo: Path) -> None:
    (calc_repo / "AGENTS.md").write_text(CHECKS)
    out = await run_scripted(
        [Turn(tool_calls=[DIAG]), Turn(text="done")],
        calc_repo,
        diagnostics=True,
        workspace_trusted=False,
    )
    assert out.of("tool_result")[0].ok
    assert not [e for e in out.of("approval") if e.call_id.startswith("check:agents-md")]
    assert not (calc_repo / "agents_check_ran.txt").exists()
    # still instructions for the model
    assert "touch agents_check_ran.txt" in str(out.server.requests[0]["messages"][0])


async def test_run_trusted_agents_md_checks_run_through_approval(calc_repo: Path) -> None:
    (calc_repo / "AGENTS.md").write_text(CHECKS)
    # on the user's own tree (not contained), the policy refuses the check's command
    out = await run_scripted(
        [Turn(tool_calls=[DIAG]), Turn(text="done")],
        calc_repo,
        diagnostics=True,
        workspace_trusted=True,
    )
    decided = [e for e in out.of("approval") if e.call_id == "check:agents-md-1"]
    assert [d.decision for d in decided] == ["blocked"], out.types
    assert not (calc_repo / "agents_check_ran.txt").exists()
    # on a scratch copy (contained), the same policy allows it and it runs there
    out = await run_scripted(
        [Turn(tool_calls=[DIAG]), Turn(text="done")],
        calc_repo,
        diagnostics=True,
        workspace_trusted=True,
        review=True,
    )
    scratch = out.report.scratch
    assert scratch is not None
    try:
        decided = [e for e in out.of("approval") if e.call_id == "check:agents-md-1"]
        assert [d.decision for d in decided] == ["allowed"], out.types
        builds = [c for b in out.of("build") for c in b.checks if c.origin == "AGENTS.md:checks"]
        assert [c.command for c in builds] == ["touch agents_check_ran.txt"]
        assert (scratch.path / "agents_check_ran.txt").exists()
        assert not (calc_repo / "agents_check_ran.txt").exists()
    finally:
        await scratch.aclose()


async def test_run_compaction_keeps_the_instructions_as_instructions(calc_repo: Path) -> None:
    from tests.agent.test_compaction import SUMMARY, _long_run, _notes

    _notes(calc_repo)
    (calc_repo / "AGENTS.md").write_text("Rule: keep add() pure.\n")
    out = await run_scripted(
        _long_run(Turn(text=SUMMARY)), calc_repo, wire="openai", max_context_tokens=3000
    )
    assert out.of("compaction"), out.types
    assert len(out.server.requests) >= 5
    for request in out.server.requests:
        messages = request["messages"]
        assert messages[0]["role"] == "system"
        assert "Rule: keep add() pure." in str(messages[0]["content"])
        # never restated as the user's (or the summary's) words
        assert all("keep add() pure" not in str(m["content"]) for m in messages[1:])
