"""Questions go to the controlling terminal (/dev/tty), never to stdin or stdout."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest
from tests._scripted import FIX_CALC

from driveros.agent import event_adapter
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from .conftest import DRIVEROS, cli_environ

# Run driveros with a pseudo-terminal as its controlling terminal: a new session leader
# that opens the pty without O_NOCTTY acquires it (Linux), then becomes driveros.
_WRAPPER = "import os, sys; os.open(sys.argv[1], os.O_RDWR); os.execv(sys.argv[2], sys.argv[2:])"


async def _run_with_tty(
    args: list[str],
    answers: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    interrupt: bool = False,
) -> tuple[int, str, str, str]:
    """Run ``driveros agent ARGS``; answer each question seen on the terminal in turn.

    With ``interrupt`` the first question is answered with SIGINT instead (Ctrl-C).
    """
    try:
        master, slave = os.openpty()
    except OSError as exc:  # no /dev/ptmx (a minimal container)
        pytest.skip(f"no pseudo-terminal available: {exc}")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _WRAPPER,
        os.ttyname(slave),
        str(DRIVEROS),
        "agent",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    seen = ""
    pending = list(answers)

    def on_readable() -> None:
        nonlocal seen
        try:
            chunk = os.read(master, 1024)
        except OSError:  # EIO: the terminal's last user went away
            loop.remove_reader(master)
            return
        seen += chunk.decode(errors="replace")
        if not seen.rstrip().endswith(("?", ">", "]")):
            return
        if interrupt:
            proc.send_signal(signal.SIGINT)
        elif pending:
            os.write(master, (pending.pop(0) + "\n").encode())

    loop = asyncio.get_running_loop()
    os.set_blocking(master, False)
    loop.add_reader(master, on_readable)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    except TimeoutError:
        proc.kill()
        out, err = await proc.communicate()
    finally:
        loop.remove_reader(master)
        os.close(master)
        os.close(slave)  # held open until now so the terminal never hangs up mid-run
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode(), seen


async def test_cli_interactive_approval_asks_on_the_terminal(calc_repo: Path) -> None:
    sleep = ToolCallSpec("run", {"command": "sleep 0.1"})
    turns = [Turn(tool_calls=[sleep]), Turn(text="slept")]
    async with ScriptedModelServer(turns) as server:
        code, out, err, tty = await _run_with_tty(
            ["--task", "t", "--format", "ndjson", "--approve", "interactive"],
            ["y"],
            env=cli_environ(server),
            cwd=calc_repo,
        )
    assert code == 0, err
    assert "sleep 0.1" in tty
    events = [event_adapter().validate_json(line) for line in out.splitlines()]
    approvals = [e for e in events if e.type == "approval"]
    assert [(a.decision, a.name) for a in approvals] == [("approved", "run")]
    assert "sleep 0.1" not in err.split("→ run")[0]


async def test_cli_review_prompt_keeps_changes_when_asked(calc_repo: Path) -> None:
    turns = [
        Turn(tool_calls=[FIX_CALC]),
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": "calc.py"})]),
        Turn(text="Fixed."),
    ]
    async with ScriptedModelServer(turns) as server:
        code, out, err, tty = await _run_with_tty(
            ["--task", "fix", "--review", "--review-action", "prompt"],
            ["k"],
            env=cli_environ(server),
            cwd=calc_repo,
        )
    assert code == 0, err
    assert "[k]eep" in tty
    assert (calc_repo / "calc.py").read_text().endswith("a + b\n")
    assert out.splitlines()[0] == "Fixed."


async def test_cli_ctrl_c_at_the_review_prompt_discards_and_exits_7(calc_repo: Path) -> None:
    turns = [Turn(tool_calls=[FIX_CALC]), Turn(text="Fixed.")]
    async with ScriptedModelServer(turns) as server:
        code, _, err, tty = await _run_with_tty(
            ["--task", "fix", "--review", "--review-action", "prompt"],
            [],
            env=cli_environ(server),
            cwd=calc_repo,
            interrupt=True,
        )
    assert code == 7, err
    assert "[k]eep" in tty and "changes discarded" in err
    assert (calc_repo / "calc.py").read_text().endswith("a - b\n")


async def test_cli_review_prompt_applies_only_the_selected_files(calc_repo: Path) -> None:
    note = ToolCallSpec("write_file", {"path": "NOTES.md", "content": "notes\n"})
    turns = [Turn(tool_calls=[FIX_CALC, note]), Turn(text="Fixed.")]
    async with ScriptedModelServer(turns) as server:
        code, _, err, tty = await _run_with_tty(
            ["--task", "fix", "--review", "--review-action", "prompt"],
            ["s", "n", "y"],  # select; NOTES.md: no; calc.py: yes
            env=cli_environ(server),
            cwd=calc_repo,
        )
    assert code == 0, err  # the diagnostics snapshot after the edit was observed: verified
    assert "apply NOTES.md?" in tty and "apply calc.py?" in tty
    assert (calc_repo / "calc.py").read_text().endswith("a + b\n")
    assert not (calc_repo / "NOTES.md").exists()
