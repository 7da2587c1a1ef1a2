"""The feed run once on the user's own tree (``driveros agent --fix`` finding its targets,
the language server's ``publishDiagnostics`` after a save) changes nothing in it.

A committed ``conftest.py`` (tests/security/_oneshot.py) appends, creates, deletes, renames,
chmods, links, plants a git hook, writes through ``/proc/self/cwd``, tries to unmount or
remount the workspace from a nested user namespace and leaves a process that writes after
the snapshot. Every entry of the tree (``.git`` included: kind, mode, content) must be as it
was afterwards, while pytest still ran (its failing test is the reported error). A control
shows the same conftest does change the tree in an ordinary (writable) local sandbox.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from driveros.sandbox import LocalSandbox
from driveros.testing import ScriptedModelServer, Turn
from tests.cli.conftest import run_cli
from tests.security._oneshot import (
    CALC_GOOD,
    LATE_WRITE_WAIT,
    differences,
    hostile_repo,
    tree_state,
)

PYTEST = "python3 -m pytest -q -p no:cacheprovider"
#: The tests' interpreter (pytest) first on PATH, as an activated venv.
VENV_ENV = {
    "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
}


async def test_oneshot_control_the_conftest_changes_a_writable_sandbox(tmp_path: Path) -> None:
    """In a run's ordinary sandbox (the workspace writable) the conftest's writes land."""
    repo = hostile_repo(tmp_path / "repo")
    before = tree_state(repo)
    async with LocalSandbox(repo, base_env=VENV_ENV) as box:
        result = await box.run(PYTEST)
    assert "failed" in result.stdout, result.stdout + result.stderr
    changed = differences(before, tree_state(repo))
    for name in ("calc.py", "planted.py", "victim.txt", "notes.txt", "newdir", "link"):
        assert any(line.startswith(f"{name}:") for line in changed), changed


async def test_oneshot_fix_with_nothing_to_fix_leaves_the_tree(tmp_path: Path) -> None:
    repo = hostile_repo(tmp_path / "repo", calc=CALC_GOOD)
    before = tree_state(repo)
    res = await run_cli("--fix", "--format", "json", server=None, cwd=repo)
    assert res.code == 0, res.stderr
    assert "pytest" in res.json()["answer"]  # the tests ran, and passed
    await asyncio.sleep(LATE_WRITE_WAIT)
    assert differences(before, tree_state(repo)) == []


async def test_oneshot_fix_targets_leave_the_tree(tmp_path: Path) -> None:
    """The targets come from the real tree; the run itself works on a discarded review."""
    repo = hostile_repo(tmp_path / "repo")
    before = tree_state(repo)
    async with ScriptedModelServer([Turn(text="done")]) as server:
        res = await run_cli(
            "--fix", "--format", "ndjson", "--review", "--review-action", "discard",
            server=server, cwd=repo,
        )  # fmt: skip
    assert res.code == 2, res.stderr
    task = res.lines()[0]["task"]
    assert "test_calc.py:5:" in task  # pytest ran in the snapshot: its failing assert
    await asyncio.sleep(LATE_WRITE_WAIT)
    assert differences(before, tree_state(repo)) == []


async def test_oneshot_publish_diagnostics_leaves_the_tree(tmp_path: Path) -> None:
    """The language server's ``publishDiagnostics`` after a save: the failing test is
    published at its assert line, and the tree is as it was."""
    from driveros_lsp.protocol import DIAGNOSTIC_SOURCE
    from tests.server._lsp import server_env
    from tests.server._wrap_client import RawClient

    repo = hostile_repo(tmp_path / "repo")
    before = tree_state(repo)
    env = server_env()
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    argv = [sys.executable, "-m", "driveros_lsp", "--stdio"]
    async with RawClient.start(argv, env=env) as client:
        init = {
            "processId": None,
            "rootUri": repo.as_uri(),
            "capabilities": {},
            "initializationOptions": {"publishDiagnostics": True},
        }
        await client.request("initialize", init)
        client.notify("initialized", {})
        uri = (repo / "test_calc.py").as_uri()
        client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        published = await client.wait_for(
            "textDocument/publishDiagnostics",
            lambda p: (
                p["uri"] == uri
                and any(d.get("source") == DIAGNOSTIC_SOURCE for d in p["diagnostics"])
            ),
            timeout=120,
        )
        lines = [d["range"]["start"]["line"] for d in published["diagnostics"]]
        assert 4 in lines  # pytest ran in the snapshot: its failing assert
        await client.request("shutdown")
        client.notify("exit", None)
        assert await client.exit_code() == 0
    await asyncio.sleep(LATE_WRITE_WAIT)
    assert differences(before, tree_state(repo)) == []


@pytest.fixture
def home_bound_elsewhere(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A home directory and a bind mount of it at another path (the workspace)."""
    if os.geteuid() != 0:
        pytest.skip("binding a directory elsewhere needs root (mount --bind)")
    home = hostile_repo(tmp_path / "home", calc=CALC_GOOD)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    bound = tmp_path / "ws"
    bound.mkdir()
    subprocess.run(["mount", "--bind", str(home), str(bound)], check=True)
    try:
        yield home, bound
    finally:
        subprocess.run(["umount", "-l", str(bound)], check=False)


async def test_oneshot_fix_refuses_a_workspace_that_is_the_home_directory(
    home_bound_elsewhere: tuple[Path, Path],
) -> None:
    """The feed shows its workspace whole: over the home directory (here a bind mount of it
    at another path) it would show ``~/.ssh``. Refused, as ``driveros trust`` refuses it."""
    home, bound = home_bound_elsewhere
    before = tree_state(home)
    for cwd in (home, bound):
        res = await run_cli(
            "--fix", "--format", "json", server=None, cwd=cwd, extra_env={"HOME": str(home)}
        )
        assert res.code == 1, res.stdout + res.stderr
        assert "home directory" in res.stderr, res.stderr
        assert "Traceback" not in res.stderr
    assert differences(before, tree_state(home)) == []
