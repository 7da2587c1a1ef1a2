"""DockerSandbox's added folders (``--add-dir``) against the real daemon: bound at their own
path, read-only or writable; one written in place keeps its ``.git`` and ``.driveros``
read-only, and a ``hooks.toml`` made where there was no ``.driveros`` is put aside."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from driveros.sandbox import DockerSandbox, PolicyError, SandboxError
from tests.sandbox.conftest import SANDBOX_UID, make_workspace, require_docker

pytestmark = pytest.mark.docker


def _tree(root: Path) -> Path:
    root.mkdir()
    (root / "lib.py").write_text("VALUE = 1\n")
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    return root


def _hand_over(*roots: Path) -> None:
    """Commands run as the workspace's owner (make_workspace's): give it the folders."""
    if os.geteuid() == 0:
        for root in roots:
            for path in [root, *root.rglob("*")]:
                os.chown(path, SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)


async def test_docker_added_folders_read_only_and_in_place(tmp_path: Path) -> None:
    require_docker()
    ws = make_workspace(tmp_path / "ws")
    ro, rw = _tree(tmp_path / "ro"), _tree(tmp_path / "rw")
    _hand_over(ro, rw)
    # Folders are bound when the container is made: added before it starts.
    box = DockerSandbox(ws)
    box.add_folder(ro)
    box.add_folder(rw, writable=True)
    async with box:
        read = await box.run(f"cat {ro}/lib.py")
        assert read.exit_code == 0 and read.stdout == "VALUE = 1\n", read
        assert await box.read_file(f"{ro}/lib.py") == "VALUE = 1\n"
        denied = await box.run(f"touch {ro}/new.py")
        assert denied.exit_code != 0 and "Read-only file system" in denied.stderr, denied
        with pytest.raises(PolicyError, match="read-only added folder"):
            await box.write_file(f"{ro}/new.py", "x")
        wrote = await box.run(f"echo made > {rw}/made.txt")
        assert wrote.exit_code == 0, wrote
        await box.write_file(f"{rw}/tool.txt", "by the tool\n")
        hook = await box.run(f"echo evil > {rw}/.git/hooks/post-checkout")
        assert hook.exit_code != 0 and "Read-only file system" in hook.stderr, hook
        made = await box.run(f"mkdir {rw}/.driveros && echo x > {rw}/.driveros/hooks.toml")
        assert made.exit_code == 0, made
        with pytest.raises(SandboxError, match="add it first"):
            box.add_folder(tmp_path / "late")
    assert (rw / "made.txt").read_text() == "made\n"
    assert (rw / "tool.txt").read_text() == "by the tool\n"
    assert not (rw / ".git" / "hooks" / "post-checkout").exists()
    assert not (rw / ".driveros" / "hooks.toml").exists()
    assert [p.name.startswith("hooks.toml.refused-") for p in (rw / ".driveros").iterdir()] == [
        True
    ]
    assert sorted(p.name for p in ro.iterdir()) == [".git", "lib.py"]


@pytest.mark.parametrize("at", ["/workspace/lib", "/tmp", "/tmp/.driveros/x", "/proc/lib"])
def test_docker_refuses_a_folder_it_cannot_bind_at_its_path(tmp_path: Path, at: str) -> None:
    box = DockerSandbox(make_workspace(tmp_path / "ws"))
    with pytest.raises(PolicyError):
        box.add_folder(at, tmp_path)
