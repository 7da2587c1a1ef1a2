"""Issue 13 row 8: allowlisted commands that read outside the workspace or ran planted code.

Each example from the issue is refused by the classifier in the local tier; the first ones are
also run under ``dash -c`` to show what the shell would really have done."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from driveros.approval import ApprovalRequest, PolicyApproval, Tier, classify_command

from ._trace import outside, trace_command

DEEP = "/".join([".?"] * 12)
EXAMPLES = [
    (f"cat {DEEP}/etc/hostname", "can match `.` or `..`"),
    ("grep -e. /etc/hostname", "outside the workspace"),
    ("grep -ie. /etc/hostname", "outside the workspace"),
    ("rg --regexp . /etc/hostname", "outside the workspace"),
    ("grep --regexp=. ../x", "reaches outside the workspace"),
    ("HOME=. git status", "setting HOME is not auto-allowed"),
    ("HOME=.; git status", "setting HOME is not auto-allowed"),  # HOME is exported already
    ("XDG_CONFIG_HOME=cfg git status", "setting XDG_CONFIG_HOME is not auto-allowed"),
    ("RIPGREP_CONFIG_PATH=rgrc rg x", "setting RIPGREP_CONFIG_PATH is not auto-allowed"),
    ("git -C sub status", "git option -C is not auto-allowed"),
    ("cd sub && git status", "git after `cd`"),
    ("go test -exec=x ./...", "`go -exec` is not auto-allowed"),
    ("go test -exec x ./...", "`go -exec` is not auto-allowed"),
    ("go test -toolexec=x ./...", "`go -toolexec` is not auto-allowed"),
    ("go test --toolexec x", "`go -toolexec` is not auto-allowed"),
    ("mypy --install-typ", "`mypy --install-types` is not auto-allowed"),
    ("python -m mypy --install-t src", "`mypy --install-types` is not auto-allowed"),
]


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """A workspace with a planted ``sub/.git`` whose fsmonitor runs a script."""
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws / "sub")], check=True)
    hook = ws / "sub" / "monitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {tmp_path}/PWNED\n")
    hook.chmod(0o755)
    subprocess.run(
        ["git", "-C", str(ws / "sub"), "config", "core.fsmonitor", str(hook)], check=True
    )
    (ws / "rgrc").write_text("--pre=./sub/monitor.sh\n")
    (ws / "x").write_text("x\n")
    return ws


@pytest.mark.parametrize(("command", "reason"), EXAMPLES)
def test_allowlist_example_is_refused(planted: Path, command: str, reason: str) -> None:
    decision = classify_command(command, workspace=str(planted))
    assert not decision.allowed
    assert reason in decision.reason, decision.reason


@pytest.mark.parametrize(
    "command", [f"cat {DEEP}/etc/hostname", "grep -e. /etc/hostname", "git -C sub status"]
)
def test_allowlist_example_really_escapes_under_dash(
    planted: Path, tmp_path: Path, command: str
) -> None:
    """What the classifier now refuses did read outside or run planted code for real."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    trace = trace_command(command, cwd=planted, env=env, out=tmp_path)
    escaped = outside(trace, allowed=(str(planted), str(tmp_path / "strace.log")))
    ran_planted = any(p.endswith("monitor.sh") for p in trace.executed)
    assert "/etc/hostname" in escaped or ran_planted, trace.raw[-2000:]


@pytest.mark.parametrize(
    "command",
    [
        "cat link/secret.txt",
        "cat ./link/*.txt",
        "cat ./*/secret.txt",
        "cd link && cat secret.txt",
        "grep -r x link",
    ],
)
async def test_local_tier_refuses_paths_through_a_planted_symlink(
    tmp_path: Path, command: str
) -> None:
    """The same attack through a committed symlink: the text stays inside, the file does not."""
    outside_dir = tmp_path / "outside"
    outside_dir.mkdir()
    (outside_dir / "secret.txt").write_text("outside\n")
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "link").symlink_to(outside_dir)
    (ws / "docs").symlink_to("src")  # a symlink that stays inside is fine
    local = PolicyApproval(workspace=ws, tier=Tier(sandbox="local", scratch=True))
    decision = await local.decide(ApprovalRequest(tool="run", command=command))
    assert not decision.allowed
    assert "through a symlink" in decision.reason
    inside = await local.decide(ApprovalRequest(tool="run", command="ls docs ./docs/*.py"))
    assert inside.allowed, inside.reason
    contained = Tier(sandbox="docker", runtime="runc", network=False, scratch=True)
    boxed = PolicyApproval(workspace="/workspace", tier=contained)
    assert (await boxed.decide(ApprovalRequest(tool="run", command=command))).allowed
