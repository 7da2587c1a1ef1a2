"""The Neovim plugin in a real headless Neovim 0.11: health, missing server, trace rendering."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.editors.neovim._nvim import run_nvim


def test_checkhealth_names_keys_without_values(tmp_path: Path) -> None:
    secret = "sk-test-secret-value-9876"
    out = run_nvim("checkhealth.lua", cwd=tmp_path, env={"ANTHROPIC_API_KEY": secret})
    text = "\n".join(out["lines"])
    assert "driveros: Neovim" in text
    assert "OK Neovim 0.11" in text
    assert "driveros: language server" in text
    assert "ANTHROPIC_API_KEY" in text
    assert secret not in text
    assert "driveros: docker sandbox tiers" in text


def test_missing_server_gives_clear_message(tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text("x = 1\n")
    env = {"PATH": "/usr/bin:/bin"}  # no .venv, no driveros-lsp anywhere
    out = run_nvim("missing_server.lua", cwd=tmp_path, env=env)
    messages = [n["msg"] for n in out["notes"]]
    assert any("driveros-lsp was not found" in m and "cmd" in m for m in messages), messages
    assert out["clients"] == 0
    assert any("language server is not running" in n["msg"] for n in out["after_run"])


def test_trace_buffer_renders_a_run(tmp_path: Path) -> None:
    events = [
        {
            "type": "run_started",
            "run_id": "r1",
            "seq": 0,
            "ts": 0,
            "task": "fix the test",
            "provider": "openai",
            "model": "m",
            "workspace": "/w",
            "sandbox": "local",
        },
        {"type": "turn_started", "run_id": "r1", "seq": 1, "ts": 0, "turn": 1},
        {
            "type": "thinking",
            "run_id": "r1",
            "seq": 2,
            "ts": 0,
            "turn": 1,
            "text": "Let me ",
            "delta": True,
        },
        {
            "type": "thinking",
            "run_id": "r1",
            "seq": 3,
            "ts": 0,
            "turn": 1,
            "text": "look.",
            "delta": True,
        },
        {
            "type": "tool_call",
            "run_id": "r1",
            "seq": 4,
            "ts": 0,
            "turn": 1,
            "call_id": "c1",
            "name": "read_file",
            "arguments": {"path": "app.py"},
        },
        {
            "type": "tool_result",
            "run_id": "r1",
            "seq": 5,
            "ts": 0,
            "turn": 1,
            "call_id": "c1",
            "name": "read_file",
            "ok": True,
            "output": "line one\nline two",
            "duration_ms": 3.2,
            "observed": True,
        },
        {
            "type": "diagnostics",
            "run_id": "r1",
            "seq": 6,
            "ts": 0,
            "turn": 1,
            "fingerprint": "f",
            "total": 0,
            "new": [],
            "fixed": [{"path": "app.py", "line": 3, "message": "undefined name"}],
        },
        {
            "type": "turn_finished",
            "run_id": "r1",
            "seq": 7,
            "ts": 0,
            "turn": 1,
            "duration_ms": 12,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
        {
            "type": "result",
            "run_id": "r1",
            "seq": 8,
            "ts": 0,
            "outcome": "answered",
            "exit_code": 0,
            "answer": "Fixed it.",
            "verified": True,
            "turns": 1,
            "usage": {"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.0123},
            "duration_ms": 40,
        },
    ]
    events_file = tmp_path / "events.json"
    events_file.write_text(json.dumps(events))
    out = run_nvim("trace_render.lua", cwd=tmp_path, env={"EVENTS": os.fspath(events_file)})
    lines = out["lines"]
    assert lines[0] == "# Run r1: fix the test"
    assert "## Turn 1" in lines
    assert "  ~ Let me look." in lines  # deltas coalesced into one block
    assert any(line.startswith('  ▶ read_file {"path":"app.py"}') for line in lines)
    assert "      line one" in lines
    assert any("- app.py:3 undefined name" in line for line in lines)
    assert any(line.startswith("= answered (exit 0) · verified: yes") for line in lines)
    assert "  Fixed it." in lines
    result_line = next(line for line in lines if line.startswith("= answered"))
    assert "10 in / 5 out, $0.0123" in result_line  # what the run cost
    assert any("5 out, cost unknown" in line for line in lines)  # an unpriced turn
    # tool output is folded, thinking is dimmed, the buffer is read-only
    one_based = lines.index("      line one") + 1
    assert one_based in out["folded"]
    thinking_line = str(lines.index("  ~ Let me look.") + 1)
    assert out["hl"][thinking_line] == "Comment"
    assert out["modifiable"] is False
    assert out["run"]["status"] == "finished"
    assert out["run"]["outcome"] == "answered"


def test_a_workspace_venv_server_runs_only_once_trusted(tmp_path: Path) -> None:
    """A cloned repository's `.venv/bin/driveros-lsp` is the repository's code: the plugin
    starts it only after `:trust`, and not again once it changed (docs/security.md)."""
    planted = tmp_path / ".venv" / "bin" / "driveros-lsp"
    planted.parent.mkdir(parents=True)
    planted.write_text(f"#!/bin/sh\ntouch {tmp_path / 'pwned'}\n")
    planted.chmod(0o755)
    on_path = tmp_path / "bin" / "driveros-lsp"
    on_path.parent.mkdir()
    on_path.write_text("#!/bin/sh\nexit 0\n")
    on_path.chmod(0o755)
    out = run_nvim(
        "workspace_venv.lua", cwd=tmp_path, env={"PATH": f"{on_path.parent}:/usr/bin:/bin"}
    )
    assert out["untrusted"]["cmd"] == [str(on_path), "--stdio"]
    assert out["trusted"]["cmd"] == [str(planted), "--stdio"]
    assert out["changed"]["cmd"] == [str(on_path), "--stdio"]
    assert not (tmp_path / "pwned").exists()

    on_path.unlink()
    planted.write_text("#!/bin/sh\nexit 0\n")  # fresh content: not trusted again
    out = run_nvim("workspace_venv.lua", cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert out["untrusted"].get("cmd") is None
    assert "not trusted" in out["untrusted"]["err"] and "trust" in out["untrusted"]["err"]


def test_trace_shows_each_proposal_once_from_the_notification(tmp_path: Path) -> None:
    out = run_nvim("trace_proposal.lua", cwd=tmp_path)
    proposals = [line for line in out["lines"] if line.startswith("» proposal")]
    assert proposals == [
        "» proposal: 2 files — :DriverOS review",
        "» proposal: 1 file — :DriverOS review",
    ]
    first = out["lines"].index(proposals[0])
    assert out["lines"][first + 1 : first + 3] == ["    modify a.py", "    create b.py"]


def test_trace_renders_a_run_that_ended_before_the_agent_started(tmp_path: Path) -> None:
    # canceled during the trust question: the server's result is the run's only event
    from driveros.agent import Result

    result = Result(run_id="r1", seq=1, outcome="canceled", exit_code=7, error="canceled")
    events_file = tmp_path / "events.json"
    events_file.write_text(json.dumps([result.model_dump(mode="json")]))
    out = run_nvim("trace_render.lua", cwd=tmp_path, env={"EVENTS": os.fspath(events_file)})
    lines = out["lines"]
    assert any(line.startswith("= canceled (exit 7) · verified: no · 0 turns") for line in lines)
    assert "  error: canceled" in lines
    assert out["run"]["status"] == "finished"
    assert out["run"]["outcome"] == "canceled"
