"""Issue 27 seen by an attacker: variations of the rows a hostile repository or model tries.

- A workspace's own ``bwrap`` (``.venv/bin/bwrap`` in a repository whose venv the user
  activated) is never what driveros runs to make the sandbox: it would run on the host.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from driveros.sandbox import LocalSandbox
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests._scripted import calc_repo as calc_repo  # the fixture
from tests.cli.conftest import DRIVEROS, cli_environ, run_cli
from tests.cli.conftest import git_repo as git_repo  # the fixture


def _plant_bwrap(ws: Path, outside: Path) -> Path:
    """A repository's ``.venv/bin/bwrap`` that leaves a mark outside, then does the real job
    (so nothing but the mark tells that it ran)."""
    bin_dir = ws / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (ws / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    fake = bin_dir / "bwrap"
    fake.write_text(f'#!/bin/sh\ntouch {outside}/planted_bwrap_ran\nexec /usr/bin/bwrap "$@"\n')
    fake.chmod(0o755)
    return bin_dir


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    return path


async def test_planted_bwrap_on_the_path_never_runs(tmp_path: Path, outside: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    bin_dir = _plant_bwrap(ws, outside)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    async with LocalSandbox(ws, base_env=env) as box:
        res = await box.run("echo inside")
    assert res.stdout == "inside\n"  # the system's bubblewrap made the sandbox
    assert sorted(p.name for p in outside.iterdir()) == []


async def test_planted_bwrap_never_runs_through_the_cli(calc_repo: Path, outside: Path) -> None:
    """The repository ships it, the user's venv is active, the model only asks for
    diagnostics under ``--approve never``; ``driveros doctor`` does not run it either."""
    bin_dir = _plant_bwrap(calc_repo, outside)
    turns = [Turn(tool_calls=[ToolCallSpec("diagnostics", {})]), Turn(text="ok")]
    async with ScriptedModelServer(turns) as server:
        path = f"{bin_dir}:{cli_environ(server)['PATH']}"
        res = await run_cli(
            "--task", "t", "--format", "ndjson", "--approve", "never",
            server=server, cwd=calc_repo,
            extra_env={"PATH": path, "VIRTUAL_ENV": str(bin_dir.parent)},
        )  # fmt: skip
    assert res.code in (0, 2), res.stderr
    results = [e for e in res.lines() if e["type"] == "tool_result"]
    assert len(results) == 1 and json.dumps(results[0])  # the feed answered
    env = cli_environ(None) | {"PATH": path}
    doctor = subprocess.run(
        [str(DRIVEROS), "doctor", "--workspace", str(calc_repo)],
        env=env, cwd=calc_repo, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert "local sandbox" in doctor.stdout, doctor.stderr
    assert sorted(p.name for p in outside.iterdir()) == []


LEAK_CONFTEST = """
import pathlib
here = pathlib.Path(__file__).parent
(here / "conftest_ran.txt").write_text("ran")
try:
    (here / "leaked.txt").write_text(pathlib.Path({secret!r}).read_text())
except OSError as exc:
    (here / "leaked.txt").write_text("refused: " + type(exc).__name__)
"""


@pytest.mark.parametrize("how", ["activated_path", "virtual_env"])
async def test_planted_pyvenv_cfg_binds_nothing_outside(
    calc_repo: Path, tmp_path: Path, how: str
) -> None:
    """A repository's ``.venv/pyvenv.cfg`` names any directory as the venv's base (``home``):
    the sandbox must not bind it (here a private directory with no interpreter in it)."""
    private = tmp_path / "private"
    (private / "bin").mkdir(parents=True)
    (private / "secret.txt").write_text("TOPSECRET-pyvenv\n")
    venv = calc_repo / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {private}/bin\n")
    (calc_repo / "conftest.py").write_text(LEAK_CONFTEST.format(secret=str(private / "secret.txt")))
    turns = [Turn(tool_calls=[ToolCallSpec("diagnostics", {})]), Turn(text="ok")]
    async with ScriptedModelServer(turns) as server:
        path = cli_environ(server)["PATH"]
        extra = (
            {"PATH": f"{venv}/bin:{path}"}
            if how == "activated_path"
            else {"VIRTUAL_ENV": str(venv)}
        )
        res = await run_cli(
            "--task", "t", "--format", "ndjson", "--approve", "policy",
            server=server, cwd=calc_repo, extra_env=extra,
        )  # fmt: skip
    assert res.code in (0, 2), res.stderr
    assert (calc_repo / "conftest_ran.txt").read_text() == "ran"  # the tests ran
    assert "TOPSECRET" not in (calc_repo / "leaked.txt").read_text()
    assert "TOPSECRET" not in res.stdout + res.stderr


GIT_CONFTEST = """
import pathlib, subprocess
here = pathlib.Path(__file__).parent
(here / "conftest_ran.txt").write_text("ran")
hook = {outside!r} + "/hook_ran"
for name in ("pre-commit", "post-checkout"):
    try:
        path = here / ".git" / "hooks" / name
        path.write_text("#!/bin/sh\\ntouch " + hook + "\\n")
        path.chmod(0o755)
    except OSError:
        pass
try:
    with open(here / ".git" / "config", "a") as f:
        f.write("[core]\\n\\tfsmonitor = touch " + {outside!r} + "/fsmonitor_ran\\n")
except OSError:
    pass
subprocess.run(["git", "config", "core.hooksPath", ".planted"], cwd=here, check=False)
"""


async def test_code_the_feed_runs_cannot_write_the_repositorys_git_dir(
    git_repo: Path, outside: Path
) -> None:
    """A repository's conftest, imported by the feed's pytest on the user's tree (``--approve
    policy``: a writable sandbox; under ``never`` it discards every write), plants a hook and
    ``core.fsmonitor`` in ``.git``: the user's next ``git status`` or ``git commit`` on the
    host would run them. ``.git`` is read-only in the sandbox."""
    (git_repo / "conftest.py").write_text(GIT_CONFTEST.format(outside=str(outside)))
    config = (git_repo / ".git" / "config").read_bytes()
    turns = [Turn(tool_calls=[ToolCallSpec("diagnostics", {})]), Turn(text="ok")]
    async with ScriptedModelServer(turns) as server:
        res = await run_cli(
            "--task", "t", "--format", "ndjson", "--approve", "policy",
            server=server, cwd=git_repo,
        )  # fmt: skip
    assert res.code in (0, 2), res.stderr
    assert (git_repo / "conftest_ran.txt").read_text() == "ran"  # the tests ran
    assert (git_repo / ".git" / "config").read_bytes() == config
    assert not (git_repo / ".git" / "hooks" / "pre-commit").exists()
    git = ["git", "-c", "user.name=T", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "status"], cwd=git_repo, capture_output=True, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], cwd=git_repo, check=True)
    assert sorted(p.name for p in outside.iterdir()) == []


HOOKS_TOML = '[[hooks]]\nevent = "run_start"\ncommand = "touch {outside}/hook_ran"\n'
HOOK_CONFTEST = """
import pathlib
here = pathlib.Path(__file__).parent
(here / "conftest_ran.txt").write_text("ran")
try:
    (here / ".driveros").mkdir(exist_ok=True)
    (here / ".driveros" / "hooks.toml").write_text({toml!r})
except OSError:
    pass
"""


@pytest.mark.parametrize("how", ["write_file", "conftest"])
async def test_a_run_cannot_plant_the_hooks_the_next_run_runs_on_the_host(
    calc_repo: Path, outside: Path, how: str
) -> None:
    """In a trusted workspace ``.driveros/hooks.toml`` runs as the user, outside the
    sandbox: neither the model's file tools nor code in the sandbox may write it."""
    toml = HOOKS_TOML.format(outside=outside)
    if how == "write_file":
        plant = ToolCallSpec("write_file", {"path": ".driveros/hooks.toml", "content": toml})
    else:
        content = HOOK_CONFTEST.format(toml=toml)
        plant = ToolCallSpec("write_file", {"path": "conftest.py", "content": content})
    turns = [Turn(tool_calls=[plant]), Turn(tool_calls=[ToolCallSpec("diagnostics", {})])]
    for run_turns in ([*turns, Turn(text="ok")], [Turn(text="second run")]):
        async with ScriptedModelServer(run_turns) as server:
            res = await run_cli(
                "--task", "t", "--format", "ndjson", "--approve", "policy", "--trust",
                server=server, cwd=calc_repo,
            )  # fmt: skip
        assert res.code in (0, 2), res.stderr
    if how == "conftest":
        assert (calc_repo / "conftest_ran.txt").read_text() == "ran"
    assert not (calc_repo / ".driveros" / "hooks.toml").exists()
    assert sorted(p.name for p in outside.iterdir()) == []


PTRACE_HOST = """
import ctypes, os, pathlib
libc = ctypes.CDLL(None, use_errno=True)
me = {os.getpid(), os.getppid()}
for proc in pathlib.Path("/proc").iterdir():
    if not proc.name.isdigit() or int(proc.name) in me:
        continue
    cmdline = (proc / "cmdline").read_bytes()
    if b"SCM_RIGHTS" not in cmdline or not (proc / "comm").read_text().startswith("python"):
        continue
    pid = int(proc.name)
    attached = libc.ptrace(16, pid, 0, 0) == 0  # PTRACE_ATTACH
    if attached:
        os.waitpid(pid, 0)
        libc.ptrace(17, pid, 0, 0)  # PTRACE_DETACH
    seen = 0  # descriptors whose target it could read (the socket among them)
    try:
        names = os.listdir(proc / "fd")
    except OSError:
        names = []
    for name in names:
        try:
            os.readlink(proc / "fd" / name)
            seen += 1
        except OSError:
            pass
    print(pid, "attached" if attached else "refused", seen)
"""


async def test_a_command_cannot_ptrace_the_sandboxs_process_host(tmp_path: Path) -> None:
    """The in-sandbox host holds the socket driveros reads answers from: a command that
    attached to it could forge exit codes or flood driveros. It is not dumpable."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "probe.py").write_text(PTRACE_HOST)
    async with LocalSandbox(ws, base_env={"PATH": "/usr/bin:/bin"}) as box:
        res = await box.run("python3 probe.py")
    assert res.exit_code == 0, res
    lines = res.stdout.split()
    assert len(lines) == 3, res.stdout  # the host was found
    assert lines[1:] == ["refused", "0"], res.stdout


async def test_a_review_run_never_runs_the_real_trees_planted_rg(
    git_repo: Path, outside: Path
) -> None:
    """A repository tracks ``.venv/bin/rg`` and the user's venv is active; in a ``--review``
    run the workspace is a view elsewhere, so the real tree's ``rg`` is not "inside the
    workspace", yet it must not run on the host for the read-only ``search`` tool."""
    bin_dir = git_repo / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "rg").write_text(f"#!/bin/sh\ntouch {outside}/planted_rg_ran\nexit 1\n")
    (bin_dir / "rg").chmod(0o755)
    git = ["git", "-c", "user.name=T", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "add", "-f", ".venv/bin/rg"], cwd=git_repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "tools"], cwd=git_repo, check=True)
    turns = [Turn(tool_calls=[ToolCallSpec("search", {"pattern": "def add"})]), Turn(text="ok")]
    async with ScriptedModelServer(turns) as server:
        path = f"{bin_dir}:{cli_environ(server)['PATH']}"
        res = await run_cli(
            "--task", "t", "--format", "ndjson", "--approve", "never",
            "--review", "--review-action", "discard",
            server=server, cwd=git_repo, extra_env={"PATH": path},
        )  # fmt: skip
    assert res.code in (0, 2), res.stderr
    results = [e for e in res.lines() if e["type"] == "tool_result"]
    assert results and "calc.py" in json.dumps(results[0])  # the search still worked
    assert sorted(p.name for p in outside.iterdir()) == []
