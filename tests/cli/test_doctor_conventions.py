"""``driveros doctor`` lists the instruction files, custom commands, hooks and tracing a run
in the workspace would use; an untrusted workspace's commands and hooks are not among them."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_doctor import as_json, check, doctor


def test_doctor_lists_instructions_commands_hooks_and_tracing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".driveros" / "commands").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("# Agents\n## Checks\n- `pytest -q`\n")
    (ws / ".driveros" / "commands" / "ship.md").write_text("Ship it\n")
    marker = tmp_path / "hook_ran"
    (ws / ".driveros" / "hooks.toml").write_text(
        f'[[hooks]]\nevent = "run_start"\ncommand = "touch {marker}"\n'
    )
    config = tmp_path / "config" / "driveros"
    (config / "commands").mkdir(parents=True)
    (config / "AGENTS.md").write_text("mine\n")
    (config / "commands" / "explain.md").write_text("Explain $1\n")
    (config / "hooks.toml").write_text('[[hooks]]\nevent = "pre_tool"\ncommand = "true"\n')
    report = as_json(doctor(ws, "--format", "json"))
    assert not marker.exists()
    instructions = check(report, "conventions", "instructions")["detail"]
    assert instructions.startswith("user:") and "repository:AGENTS.md" in instructions
    assert check(report, "conventions", "commands")["detail"] == "/explain (user)"
    detail = check(report, "conventions", "agents-md checks")["detail"]
    assert detail == "pytest -q (ignored: not trusted)"
    assert check(report, "conventions", "hooks")["detail"] == "pre_tool: true (user)"
    notice = check(report, "conventions", "notice")
    assert notice["status"] == "warning" and "not trusted" in notice["detail"]
    assert check(report, "conventions", "opentelemetry")["detail"].startswith("off")
    facts = report["facts"]["conventions"]
    assert facts["commands"] == ["explain"] and facts["otel"]["on"] is False

    traced = as_json(
        doctor(ws, "--format", "json", OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:4318")
    )
    detail = check(traced, "conventions", "opentelemetry")["detail"]
    assert detail == "spans to http://127.0.0.1:4318/v1/traces"
