"""Approval policies: policy, never, allow-all, interactive (real pseudo-terminals)."""

from __future__ import annotations

import asyncio
import os
import pty
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from driveros import ConfigError
from driveros.approval import (
    AllowAllApproval,
    ApprovalPolicy,
    ApprovalRequest,
    Decision,
    InteractiveApproval,
    NeverApproval,
    NoTerminalError,
    PolicyApproval,
    approval_policy,
)

READ = ApprovalRequest(tool="read_file", arguments={"path": "a.py"})
EDIT = ApprovalRequest(
    tool="edit_file", arguments={"path": "a.py", "old_string": "a", "new_string": "b"}
)
TESTS = ApprovalRequest(tool="run", arguments={"command": "pytest -q"})
PUSH = ApprovalRequest(tool="run", arguments={"command": "git push"})
ODD = ApprovalRequest(tool="launch_rockets")


def test_approval_request_fills_command_from_run_arguments() -> None:
    assert TESTS.command == "pytest -q"
    assert TESTS.describe() == "run: pytest -q"
    assert EDIT.command is None
    assert EDIT.describe() == "edit_file: a.py"
    explicit = ApprovalRequest(tool="run", arguments={}, command="ls")
    assert explicit.command == "ls"


async def test_policy_approval_table() -> None:
    policy = PolicyApproval()
    got = {
        r.tool + ":" + (r.command or ""): await policy.decide(r)
        for r in (READ, EDIT, TESTS, PUSH, ODD)
    }
    assert {k: d.allowed for k, d in got.items()} == {
        "read_file:": True,
        "edit_file:": True,
        "run:pytest -q": True,
        "run:git push": False,
        "launch_rockets:": False,
    }
    assert (
        got["run:git push"].reason == "blocked by policy: `git push` is not a read-only git command"
    )
    assert not any(d.asked for d in got.values())
    empty = await policy.decide(ApprovalRequest(tool="run", arguments={"command": "  "}))
    assert not empty.allowed


async def test_never_approval_allows_only_read_only_tools() -> None:
    never = NeverApproval()
    for tool in ("read_file", "list_files", "search", "diagnostics"):
        assert (await never.decide(ApprovalRequest(tool=tool))).allowed
    for req in (EDIT, TESTS, PUSH, ApprovalRequest(tool="write_file"), ODD):
        decision = await never.decide(req)
        assert not decision.allowed
        assert "never" in decision.reason


async def test_allow_all_approval() -> None:
    assert all([(await AllowAllApproval().decide(r)).allowed for r in (PUSH, ODD, EDIT)])


def test_approval_policy() -> None:
    assert isinstance(approval_policy("policy"), PolicyApproval)
    assert isinstance(approval_policy("never"), NeverApproval)
    assert isinstance(approval_policy("allow-all"), AllowAllApproval)
    for name in ("policy", "never", "allow-all"):
        policy = approval_policy(name)
        assert isinstance(policy, ApprovalPolicy)
        assert policy.name == name
    with pytest.raises(ConfigError, match="unknown approval policy 'sometimes'"):
        approval_policy("sometimes")


def test_interactive_without_terminal_fails_fast(tmp_path: Path) -> None:
    """In a new session there is no controlling terminal: construction raises at once."""
    script = textwrap.dedent(
        """
        from driveros.approval import approval_policy, NoTerminalError
        from driveros import ConfigError
        try:
            approval_policy("interactive")
        except NoTerminalError as exc:
            assert isinstance(exc, ConfigError)
            raise SystemExit("no-tty: " + str(exc))
        raise SystemExit("constructed")
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("no-tty: interactive approval needs a terminal")


def test_interactive_missing_tty_path_is_config_error(tmp_path: Path) -> None:
    with pytest.raises(NoTerminalError, match="--approve policy"):
        InteractiveApproval(tty_path=tmp_path / "no-such-tty")


@pytest.fixture
def terminal() -> Iterator[tuple[int, str]]:
    """A real pseudo-terminal: (master fd we type into, path of the slave the policy opens)."""
    master, slave = pty.openpty()
    path = os.ttyname(slave)
    try:
        yield master, path
    finally:
        os.close(slave)
        os.close(master)


async def _answer(master: int, text: str) -> str:
    """Wait for the prompt on the terminal, then type ``text``; returns the prompt seen."""
    seen = b""
    while b"> " not in seen:
        seen += await asyncio.to_thread(os.read, master, 4096)
    os.write(master, text.encode())
    return seen.decode()


async def test_interactive_asks_only_beyond_policy(terminal: tuple[int, str]) -> None:
    master, path = terminal
    approval = InteractiveApproval(tty_path=path)
    assert await approval.decide(TESTS) == Decision(
        allowed=True, reason="allowed by policy: read-only or test command"
    )
    typed = asyncio.create_task(_answer(master, "y\n"))
    decision = await approval.decide(PUSH)
    prompt = await typed
    assert "driveros wants to run: git push" in prompt
    assert decision == Decision(
        allowed=True, reason="approved by the user", asked=True, answered_by="tty", scope="once"
    )


async def test_interactive_denial_carries_reason(terminal: tuple[int, str]) -> None:
    master, path = terminal
    approval = InteractiveApproval(tty_path=path)
    typed = asyncio.create_task(_answer(master, "n use the test suite instead\n"))
    decision = await approval.decide(PUSH)
    await typed
    assert decision == Decision(
        allowed=False,
        reason="denied by the user: use the test suite instead",
        asked=True,
        answered_by="tty",
    )


async def test_interactive_always_remembers_the_request(terminal: tuple[int, str]) -> None:
    master, path = terminal
    approval = InteractiveApproval(tty_path=path)
    typed = asyncio.create_task(_answer(master, "a\n"))
    assert (await approval.decide(PUSH)).asked
    await typed
    again = await approval.decide(PUSH)
    assert again.allowed
    assert not again.asked


async def test_interactive_prompt_is_cancellable(terminal: tuple[int, str]) -> None:
    _, path = terminal
    approval = InteractiveApproval(tty_path=path)
    task = asyncio.create_task(approval.decide(PUSH))
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
