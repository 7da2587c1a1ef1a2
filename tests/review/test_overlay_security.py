"""An overlay view is where a hostile model's commands run: nothing they do reaches the user's
files, layers are never symlinks, and the docker tier sees the view with ``.git`` read-only
or hidden."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from driveros.review import ScratchWorkspace, scratch_strategies
from driveros.sandbox import DockerSandbox
from driveros.state import list_leases, mounts_under
from tests.review._repo import OWNER, git, hand_over, make_repo, write_files
from tests.sandbox.conftest import require_docker

pytestmark = pytest.mark.skipif(
    scratch_strategies()["overlay"] is not None,
    reason=f"no kernel overlay here: {scratch_strategies()['overlay']}",
)


def _snapshot(root: Path) -> dict[str, tuple[object, ...]]:
    """Every entry below ``root`` (``.git`` included): type, mode, owner, size, mtime, content."""
    out: dict[str, tuple[object, ...]] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            p = Path(dirpath, name)
            st = p.lstat()
            data: object = None
            if stat.S_ISREG(st.st_mode):
                data = p.read_bytes()
            elif stat.S_ISLNK(st.st_mode):
                data = os.readlink(p)
            out[str(p.relative_to(root))] = (
                st.st_mode,
                st.st_uid,
                st.st_size,
                st.st_mtime_ns,
                data,
            )
    return out


_ATTACKS = [
    "echo x >> a.py",
    ": > b/c.txt",
    "chmod 4777 a.py",
    "chmod 000 b",
    "touch -d 2001-01-01 a.py",
    "ln a.py hard.py && echo y >> hard.py",
    "ln -s ../outside b/out && echo z > b/link.txt",
    "rm -rf d",
    "mv e e2 && echo moved >> e2/f.txt",
    "setfattr -n user.x -v 1 a.py 2>/dev/null || true",
    "git add -A && git -c user.name=a -c user.email=a@a commit -qm agent",
    "echo '#!/bin/sh' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
    "git config core.fsmonitor 'touch fsmonitor-ran'",
    "git tag planted && git branch -f main HEAD",
    "rm -rf .git",
]


async def test_commands_in_the_view_never_write_the_users_files(
    tmp_path: Path, scratch_base: Path
) -> None:
    repo = make_repo(
        tmp_path / "proj",
        {"a.py": "A = 1\n", "b/c.txt": "c\n", "d/x.txt": "x\n", "e/f.txt": "f\n"},
    )
    write_files(repo, {"untracked.txt": "u\n", "b/ignored.log": "i\n"})
    before = _snapshot(repo)
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as s:
        assert s.strategy == "overlay"
        for command in _ATTACKS:
            subprocess.run(["sh", "-c", command], cwd=s.path, capture_output=True, check=False)
        assert _snapshot(repo) == before
        paths = {p for c in await s.changes() for p in c.paths}
        assert not any(".git" in p.split("/") for p in paths)
        assert {"a.py", "b/c.txt", "d/x.txt", "e2/f.txt"} <= paths
    assert _snapshot(repo) == before
    assert mounts_under(scratch_base) == [] and list(scratch_base.iterdir()) == []


@pytest.mark.parametrize("layer", ["upper", "overlay-work", "merged"])
async def test_a_symlinked_layer_is_never_mounted(
    tmp_path: Path, scratch_base: Path, layer: str
) -> None:
    """A kept view whose layer was swapped for a symlink (into the user's repository) while it
    was not mounted is dropped, never mounted through the link."""
    repo = make_repo(tmp_path / "proj", {"a.py": "A = 1\n"})
    s = await ScratchWorkspace.create(repo, base_dir=scratch_base)
    (s.path / "a.py").write_text("A = 2\n")
    await s.changes()
    await s.keep({"run_id": "r"})
    await s.aclose()
    merged = s.path
    assert mounts_under(merged) == []  # a kept view is unmounted when let go of
    swapped = merged if layer == "merged" else merged.parent / layer
    subprocess.run(["rm", "-rf", str(swapped)], check=True)
    swapped.symlink_to(repo, target_is_directory=True)
    before = _snapshot(repo)

    assert await ScratchWorkspace.reopen_kept(workspace=repo) == []

    assert mounts_under(scratch_base) == [] and mounts_under(repo) == []
    assert _snapshot(repo) == before
    assert await list_leases() == []


def _owned_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository owned by :data:`OWNER` (as a user's own repository is theirs), with a
    credential in its config; git run as root is told to trust it. Skips without docker or
    root."""
    require_docker()
    repo = make_repo(tmp_path / "proj", {"app.py": "print(1)\n", "pkg/m.py": "M = 1\n"})
    git(repo, "config", "remote.origin.url", "https://user:SECRET-TOKEN@example.com/x.git")
    hand_over(repo, tmp_path / "home", monkeypatch)
    return repo


@pytest.mark.docker
async def test_docker_runc_sees_the_view_with_git_read_only(
    tmp_path: Path, scratch_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _owned_repo(tmp_path, monkeypatch)
    before = _snapshot(repo)
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base, container="runc") as s:
        assert (s.strategy, s.fallback_reason) == ("overlay", "")
        async with DockerSandbox(s.path, private_copy=True) as box:
            assert (await box.run("id -u")).stdout.strip() == str(OWNER)
            edit = await box.run("echo 'print(2)' >> app.py && echo n > new.py && cat app.py")
            assert edit.exit_code == 0 and edit.stdout == "print(1)\nprint(2)\n", edit
            status = await box.run("git status --short")
            assert status.exit_code == 0 and " M app.py" in status.stdout, status
            for attack in ("touch .git/hooks/pre-commit", "rm -rf .git", "git commit -qam x"):
                assert (await box.run(attack)).exit_code != 0, attack
        assert sorted((c.path, c.action) for c in await s.changes()) == [
            ("app.py", "modify"),
            ("new.py", "create"),
        ]
        assert _snapshot(repo) == before
        # Nothing was copied up but what the container wrote (no chmod of the whole tree).
        upper = s.path.parent / "upper"
        assert sorted(str(p.relative_to(upper)) for p in upper.rglob("*") if p.is_file()) == [
            "app.py",
            "new.py",
        ]


@pytest.mark.docker
async def test_docker_untrusted_view_hides_git(
    tmp_path: Path, scratch_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _owned_repo(tmp_path, monkeypatch)
    before = _snapshot(repo)
    async with await ScratchWorkspace.create(
        repo, base_dir=scratch_base, container="runc", hide_git=True
    ) as s:
        assert s.strategy == "overlay"
        assert not os.path.lexists(s.path / ".git")
        async with DockerSandbox(s.path, private_copy=True) as box:
            seen = await box.run("ls -a; cat .git/config; grep -r SECRET-TOKEN . ; true")
            assert "SECRET-TOKEN" not in seen.stdout + seen.stderr
            assert ".git" not in seen.stdout.split()
            plant = await box.run("mkdir -p .git/hooks && echo '#!/bin/sh' > .git/hooks/x")
            assert plant.exit_code == 0  # a .git of its own, in the upper layer only
            await box.run("echo 'print(2)' >> app.py")
        assert [c.path for c in await s.changes()] == ["app.py"]
    assert _snapshot(repo) == before


async def test_container_refusals_fall_back_with_a_reason(
    tmp_path: Path, scratch_base: Path
) -> None:
    repo = make_repo(tmp_path / "proj", {"a.py": "A = 1\n"})  # owned by the test's uid
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base, container="runsc") as s:
        assert s.strategy == "worktree" and "runsc" in s.fallback_reason
    if os.geteuid() == 0:
        async with await ScratchWorkspace.create(
            repo, base_dir=scratch_base, container="runc"
        ) as s:
            assert s.strategy == "worktree" and "owned by root" in s.fallback_reason
