"""Issue 27: the local tier's sandbox without root, and its fail-closed path.

- As an unprivileged user (``nobody`` through runuser/setpriv), LocalSandbox runs commands
  in bubblewrap with user namespaces: no root needed.
- Where bubblewrap is missing or cannot make namespaces, code-running commands are refused
  with a message that names the fix, never run on the host; the read-only file tools work;
  ``driveros doctor`` says so; through ``driveros agent`` the model gets the refusal.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from driveros.sandbox import LocalSandbox, LocalSandboxUnavailableError, _bwrap
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests._scripted import calc_repo as calc_repo  # the fixture
from tests.cli.conftest import DRIVEROS, cli_environ
from tests.security._unprivileged import nobody_workspace as nobody_workspace  # the fixture
from tests.security._unprivileged import run_unprivileged

FAKE_BWRAP = "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"

AS_NOBODY = """
import asyncio, json, os, sys
sys.path[:0] = json.loads(sys.argv[2])
from driveros.sandbox import LocalSandbox

async def main():
    async with LocalSandbox(sys.argv[1]) as box:
        res = await box.run("id -u; echo made > made.txt; ls /proc | grep -c '^[0-9]'")
        print(json.dumps({"uid": os.getuid(), "stdout": res.stdout, "code": res.exit_code,
                          "stderr": res.stderr}))

asyncio.run(main())
"""


def test_local_tier_runs_as_an_unprivileged_user(nobody_workspace: Path) -> None:
    report = run_unprivileged(AS_NOBODY, nobody_workspace)
    assert report["uid"] != 0 and report["code"] == 0, report
    uid, procs = report["stdout"].split()
    assert int(uid) == report["uid"]  # mapped to itself in the user namespace
    assert int(procs) <= 6  # its own PID namespace: bwrap's init, the host, sh, ls, grep
    assert (nobody_workspace / "made.txt").stat().st_uid == report["uid"]


@pytest.fixture
def broken_bwrap(tmp_path: Path) -> Path:
    """A directory whose ``bwrap`` fails as it does where user namespaces are off."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    (bin_dir / "bwrap").write_text(FAKE_BWRAP)
    (bin_dir / "bwrap").chmod(0o755)
    return bin_dir


async def test_local_tier_fails_closed_without_namespaces(
    tmp_path: Path, broken_bwrap: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    env = {"PATH": f"{broken_bwrap}:/usr/bin:/bin"}
    async with LocalSandbox(ws, base_env=env) as box:
        with pytest.raises(LocalSandboxUnavailableError) as refused:
            await box.run("touch ran_on_host")
        with pytest.raises(LocalSandboxUnavailableError):
            await box.start_process("touch ran_on_host")
        assert await box.read_file("a.txt") == "hello\n"  # the file tools still work
        assert [m.path for m in await box.search("hello")] == ["a.txt"]
    assert not (ws / "ran_on_host").exists()
    message = str(refused.value)
    assert "cannot create namespaces" in message and "user namespaces" in message
    assert "never run on the host" in message


async def test_local_tier_fails_closed_without_bubblewrap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setattr(_bwrap, "BWRAP_DIRS", ())
    async with LocalSandbox(ws, base_env={"PATH": str(empty)}) as box:
        with pytest.raises(LocalSandboxUnavailableError) as refused:
            await box.run("touch ran_on_host")
    assert not (ws / "ran_on_host").exists()
    assert "not installed" in str(refused.value)
    assert "apt install bubblewrap" in str(refused.value)


async def test_local_tier_fails_closed_through_the_cli(calc_repo: Path, broken_bwrap: Path) -> None:
    read = ToolCallSpec("read_file", {"path": "calc.py"})
    (calc_repo / "test_touch.py").write_text("open('ran_on_host', 'w').close()\n")
    touch = ToolCallSpec("run", {"command": "python3 -m pytest -q -p no:cacheprovider"})
    turns = [Turn(tool_calls=[read]), Turn(tool_calls=[touch]), Turn(text="done")]
    async with ScriptedModelServer(turns) as server:
        env = cli_environ(server)
        env["PATH"] = f"{broken_bwrap}:{env['PATH']}"
        proc = await asyncio_run_cli(env, calc_repo)
    code, out, err = proc
    assert code in (0, 2), err
    results = [e for e in map(json.loads, out.splitlines()) if e["type"] == "tool_result"]
    assert len(results) == 2
    assert "return a - b" in json.dumps(results[0])  # read_file worked
    assert "user namespaces" in json.dumps(results[1])  # run refused with the fix
    assert not (calc_repo / "ran_on_host").exists()
    doctor = subprocess.run(
        [str(DRIVEROS), "doctor", "--workspace", str(calc_repo)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "local sandbox: bubblewrap cannot create namespaces" in doctor.stdout
    assert "fix: enable unprivileged user namespaces" in doctor.stdout


async def asyncio_run_cli(env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    import asyncio

    proc = await asyncio.create_subprocess_exec(
        str(DRIVEROS),
        "agent",
        "--task",
        "t",
        "--format",
        "ndjson",
        "--approve",
        "policy",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()
