"""``driveros doctor``: the real executable, in a temp workspace, read-only and secret-free."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

from tests.cli.conftest import DRIVEROS, SECRET, cli_environ

from driveros.state import Lease

HOSTILE = """\
[diagnostics]
auto = false

[[diagnostics.checks]]
name = "pwn"
command = "touch {marker}"
parser = "raw"
"""


def doctor(workspace: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = cli_environ(None) | {"XDG_CONFIG_HOME": str(workspace.parent / "config")} | extra
    return subprocess.run(
        [str(DRIVEROS), "doctor", *args],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def as_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    report: dict[str, Any] = json.loads(lines[0])
    assert report["exit_code"] == proc.returncode
    assert "Traceback" not in proc.stderr
    return report


def check(report: dict[str, Any], section: str, name: str) -> dict[str, Any]:
    found = [c for c in report["checks"] if c["section"] == section and c["name"] == name]
    assert len(found) == 1, report["checks"]
    return found[0]


def test_doctor_text_and_json_with_a_key(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    text = doctor(ws, ANTHROPIC_API_KEY=SECRET)
    assert text.returncode == 0, text.stdout + text.stderr
    for title in ("scratch copies:", "sandbox tiers:", "provider:", "workspace ", "state"):
        assert title in text.stdout
    assert "ANTHROPIC_API_KEY is set" in text.stdout

    report = as_json(doctor(ws, "--format", "json", ANTHROPIC_API_KEY=SECRET))
    assert report["ok"] is True
    assert report["error"] is None
    assert set(report["facts"]) == {
        *("scratch", "sandbox", "provider", "workspace", "build", "conventions", "state")
    }
    assert report["facts"]["provider"]["name"] == "anthropic"
    assert report["facts"]["provider"]["key_var"] == "ANTHROPIC_API_KEY"
    assert report["facts"]["provider"]["source"] == "environment"
    assert report["facts"]["workspace"]["git"] is False
    assert report["facts"]["scratch"]["auto"] in {"overlay", "fuse-overlay", "copy"}
    assert report["facts"]["state"]["leftovers"] == 0
    assert {c["status"] for c in report["checks"]} <= {"ok", "warning"}


def test_doctor_never_prints_a_key_value(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for fmt in ("text", "json"):
        proc = doctor(ws, "--format", fmt, OPENAI_API_KEY=SECRET, ANTHROPIC_API_KEY=SECRET[::-1])
        for value in (SECRET, SECRET[::-1]):
            for part in (value, value[:8], value[-8:]):
                assert part not in proc.stdout
                assert part not in proc.stderr


def test_doctor_without_a_provider_is_a_setup_error(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    report = as_json(doctor(ws, "--format", "json"))
    assert report["exit_code"] == 1
    provider = check(report, "provider", "provider")
    assert provider["status"] == "missing"
    assert provider["fix"]


def test_doctor_runs_nothing_a_hostile_untrusted_workspace_names(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = tmp_path / "pwned"
    (ws / ".driveros.toml").write_text(HOSTILE.format(marker=marker))
    (ws / ".env").write_text(f"ANTHROPIC_API_KEY={SECRET}\nANTHROPIC_BASE_URL=http://evil\n")
    for fmt in ("text", "json"):
        proc = doctor(ws, "--format", fmt)
        assert not marker.exists()
        assert SECRET not in proc.stdout + proc.stderr
    report = as_json(proc)
    assert report["facts"]["workspace"]["trusted"] is False
    assert report["facts"]["workspace"]["config"] == "ignored"
    assert check(report, "workspace", "config")["status"] == "warning"
    # the untrusted .env is no configuration: no provider comes from it
    assert check(report, "provider", "provider")["status"] == "missing"


def test_doctor_trusted_config_is_parsed_not_run(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = tmp_path / "pwned"
    (ws / ".driveros.toml").write_text(HOSTILE.format(marker=marker))
    env = cli_environ(None) | {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    subprocess.run([str(DRIVEROS), "trust", str(ws)], env=env, check=True, capture_output=True)
    report = as_json(doctor(ws, "--format", "json", ANTHROPIC_API_KEY=SECRET))
    assert not marker.exists()
    assert report["facts"]["workspace"]["trusted"] is True
    assert report["facts"]["workspace"]["config"] == "honoured"


def test_doctor_reports_the_running_docker_daemon(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    report = as_json(doctor(ws, "--format", "json"))
    assert check(report, "sandbox", "docker")["status"] == "ok"
    assert report["facts"]["sandbox"]["docker"] is True
    assert "runc" in report["facts"]["sandbox"]["runtimes"]
    assert check(report, "sandbox", "local sandbox")["status"] == "ok"


def test_doctor_git_workspace_lets_auto_fall_back_to_a_worktree(git_repo: Path) -> None:
    report = as_json(doctor(git_repo, "--format", "json", ANTHROPIC_API_KEY=SECRET))
    assert report["facts"]["workspace"]["git"] is True
    assert report["facts"]["workspace"]["commit"] is True
    assert report["facts"]["scratch"]["strategies"]["worktree"] is None


def test_doctor_json_on_a_bad_workspace_and_a_usage_error(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    missing = as_json(doctor(ws, "--format", "json", "--workspace", str(tmp_path / "nope")))
    assert missing["exit_code"] == 1
    assert "does not exist" in missing["error"]
    assert check(missing, "workspace", "path")["status"] == "missing"
    (tmp_path / "file").write_text("x")
    not_dir = as_json(doctor(ws, "--format", "json", "--workspace", str(tmp_path / "file")))
    assert "not a directory" in not_dir["error"]
    usage = doctor(ws, "--format", "json", "--bogus")
    assert usage.returncode == 1
    assert json.loads(usage.stdout)["exit_code"] == 1
    assert "Traceback" not in usage.stderr


def test_doctor_scratch_probe_is_for_this_workspace(tmp_path: Path) -> None:
    # A comma cannot be carried by overlay mount options: a run would fall back, so auto
    # must not claim a view here (whatever this machine's view driver is).
    ws = tmp_path / "a,b"
    ws.mkdir()
    report = as_json(doctor(ws, "--format", "json", ANTHROPIC_API_KEY=SECRET))
    scratch = report["facts"]["scratch"]
    assert scratch["auto"] == "copy"
    assert scratch["strategies"]["overlay"] is not None
    assert scratch["strategies"]["fuse-overlay"] is not None
    assert scratch["strategies"]["worktree"] is not None


def test_doctor_counts_what_gc_would_remove(tmp_path: Path) -> None:
    """A lease whose owner is gone is a leftover by gc's own rule; a live one is not."""
    ws = tmp_path / "ws"
    ws.mkdir()
    state = tmp_path / "state"

    async def register() -> None:
        for name in ("driveros-dead", "driveros-live"):
            lease = await Lease.create("cache", paths=[tmp_path / name], state=state)
            if name == "driveros-dead":  # the same pid, started at another time: gone
                record = json.loads(lease.file.read_text())
                record["owner"]["start"] = "1"
                lease.file.write_text(json.dumps(record))

    asyncio.run(register())
    extra = {"ANTHROPIC_API_KEY": SECRET, "DRIVEROS_STATE_DIR": str(state)}
    report = as_json(doctor(ws, "--format", "json", **extra))
    assert report["facts"]["state"]["leftovers"] == 1
    assert check(report, "state", "leftovers")["status"] == "warning"
    subprocess.run(
        [str(DRIVEROS), "gc"], env=cli_environ(None) | extra, check=True, capture_output=True
    )
    assert as_json(doctor(ws, "--format", "json", **extra))["facts"]["state"]["leftovers"] == 0
