"""The sandbox the feed runs in once over the user's tree (``one_shot_sandbox``): whatever
its commands do, the tree is as it was; in the local tier through the throwaway overlay and
through the read-only fallback (where the kernel lays no overlay), and in docker (a scratch
copy). The feed's diagnostics are the same whichever way the workspace is reached."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

import pytest

from driveros.config import load_environment
from driveros.diagnostics import render_snapshot
from driveros.diagnostics._identity import identity_message
from driveros.intel import DiagnosticsFeed
from driveros.runs import RunSpec
from driveros.runs._oneshot import one_shot_sandbox
from driveros.sandbox import LocalSandbox, PolicyError
from driveros.sandbox import _local as local_tier
from tests.intel._corpus import PROJECTS, RealProject
from tests.intel._projects import tool_env
from tests.security._oneshot import (
    LATE_WRITE_WAIT,
    differences,
    hostile_repo,
    tree_state,
)
from tests.security._oneshot import access as access  # the fixture

#: What a hostile command tries: every kind of change to the tree, and a late write.
ATTACK = (
    "echo x >> calc.py; touch planted.py; rm -f victim.txt; chmod 777 notes.txt; "
    "mv data.txt data2.txt; mkdir newdir; ln -s /etc/passwd link; "
    "echo y > .git/hooks/post-checkout; echo z >> /proc/self/cwd/notes.txt; "
    "(setsid sh -c 'sleep 3; echo late >> calc.py; touch late.txt' </dev/null >/dev/null 2>&1 &)"
)
ENV = {
    "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
}


async def _snapshot(repo: Path, access: str) -> list[tuple[str, int, str]]:
    async with LocalSandbox(repo, base_env=ENV, discard_writes=True) as box:
        snapshot = await DiagnosticsFeed(box).snapshot()
        assert box.workspace_access == access
        assert "pytest" in snapshot.checks
        await box.run(ATTACK)  # after the snapshot: the feed saw the tree as it is
    return sorted((d.path, d.line, d.severity) for d in snapshot.items)


async def test_oneshot_local_sandbox_discards_every_write(tmp_path: Path, access: str) -> None:
    repo = hostile_repo(tmp_path / "repo")
    before = tree_state(repo)
    found = await _snapshot(repo, access)
    assert ("test_calc.py", 5, "error") in found  # the tests ran, the conftest too
    await asyncio.sleep(LATE_WRITE_WAIT)
    assert differences(before, tree_state(repo)) == []


async def test_oneshot_diagnostics_are_those_of_a_writable_sandbox(
    tmp_path: Path, access: str
) -> None:
    repo = hostile_repo(tmp_path / "repo")
    (repo / "conftest.py").write_text("")  # a plain project: nothing for the sandbox to undo
    found = await _snapshot(repo, access)
    async with LocalSandbox(repo, base_env=ENV) as box:
        plain = await DiagnosticsFeed(box).snapshot()
    assert found == sorted((d.path, d.line, d.severity) for d in plain.items)


async def test_oneshot_file_operations_refuse_to_write(tmp_path: Path) -> None:
    repo = hostile_repo(tmp_path / "repo")
    async with LocalSandbox(repo, base_env=ENV, discard_writes=True) as box:
        assert "delete me" in await box.read_file("victim.txt")
        for write in (
            box.write_file("calc.py", "x"),
            box.write_bytes("new.txt", b"x"),
            box.edit("calc.py", "a - b", "a + b"),
            box.remove("victim.txt"),
        ):
            with pytest.raises(PolicyError):
                await write
    assert (repo / "victim.txt").exists()


async def test_oneshot_symlinked_workspace_root(tmp_path: Path) -> None:
    """A workspace reached through a symlink: the overlay lies over its real directory."""
    repo = hostile_repo(tmp_path / "repo")
    link = tmp_path / "link"
    link.symlink_to(repo)
    before = tree_state(repo)
    async with LocalSandbox(link, base_env=ENV, discard_writes=True) as box:
        result = await box.run(ATTACK + "; cat calc.py")
        assert result.stdout.endswith("x\n")  # the write landed, in the overlay
    await asyncio.sleep(LATE_WRITE_WAIT)
    assert differences(before, tree_state(repo)) == []


@pytest.mark.docker
async def test_oneshot_docker_sandbox_discards_every_write(tmp_path: Path) -> None:
    from tests.sandbox.conftest import require_docker

    require_docker()
    repo = hostile_repo(tmp_path / "repo")
    if os.getuid() == 0:  # the container runs as 65532: let it write where it can
        for path in [repo, *repo.rglob("*")]:
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | 0o777)
    before = tree_state(repo)
    spec = RunSpec(task="t", workspace=repo, sandbox="docker")
    env = load_environment(cwd=repo, environ={"PATH": "/usr/bin:/bin"})
    async with contextlib.AsyncExitStack() as stack:
        box, root = await one_shot_sandbox(spec, env, stack)
        done = await box.run(ATTACK + "; cat calc.py; ls")
        assert root == "/workspace"
        assert "planted.py" in done.stdout, done.stdout + done.stderr  # it could write
    await asyncio.sleep(LATE_WRITE_WAIT)
    assert differences(before, tree_state(repo)) == []


@pytest.mark.parametrize("project", PROJECTS, ids=[p.name for p in PROJECTS])
async def test_oneshot_real_projects_report_what_a_writable_sandbox_reports(
    project: RealProject, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """more-itertools (unittest), qs (tape), go-difflib (go build, vet, test): their declared
    builds run and report the same in the overlay, read-only and a writable sandbox."""
    root = project.build(tmp_path / "p")
    before = tree_state(root)
    found: dict[str, list[tuple[str, str, int]]] = {}
    for mode in ("overlay", "read-only", "writable"):
        if mode == "read-only":
            monkeypatch.setattr(local_tier, "overlay_prefix", lambda *_: None)
        async with LocalSandbox(
            root, base_env=tool_env(), discard_writes=mode != "writable"
        ) as box:
            snapshot = await DiagnosticsFeed(box).snapshot()
            assert box.workspace_access == mode
        assert project.check in snapshot.checks, render_snapshot(snapshot)
        found[mode] = sorted(
            (i.path, identity_message(i), i.line) for i in snapshot.items if i.severity == "error"
        )
        monkeypatch.undo()
        if mode != "writable":
            assert differences(before, tree_state(root)) == []
    assert found["overlay"] == found["read-only"] == found["writable"] != []


def test_oneshot_overlay_helper_does_nothing_when_imported() -> None:
    """The helper runs only as ``python -c``: importing it (a module walk, a doc tool) must
    not move the importing process into new namespaces."""
    import importlib

    namespaces = [os.readlink(f"/proc/self/ns/{ns}") for ns in ("user", "mnt")]
    importlib.import_module("driveros.sandbox._overlay_inner")
    assert [os.readlink(f"/proc/self/ns/{ns}") for ns in ("user", "mnt")] == namespaces


async def test_oneshot_an_added_writable_folder_is_read_only(tmp_path: Path) -> None:
    """``--add-dir DIR:rw`` beside the one-shot feed: its commands cannot write there either."""
    repo = hostile_repo(tmp_path / "repo")
    other = tmp_path / "other"
    other.mkdir()
    (other / "shared.py").write_text("SHARED = 1\n")
    before = tree_state(other)
    box = LocalSandbox(repo, base_env=ENV, discard_writes=True)
    box.add_folder(other, writable=True)
    async with box:
        done = await box.run(f"echo x >> {other}/shared.py; touch {other}/new.txt")
        assert done.exit_code != 0
        with pytest.raises(PolicyError):
            await box.write_file(str(other / "shared.py"), "x")
    assert differences(before, tree_state(other)) == []
