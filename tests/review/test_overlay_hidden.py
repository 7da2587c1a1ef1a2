"""An overlay view hides what a worktree copy never held: the user's ignored files (``.env``,
build outputs, caches) and, in a plain directory, deny-listed secret files. The project's
environments stay visible; the hiding whiteouts are never proposed; an agent's deletion (also
a whiteout) still is."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from driveros.review import ScratchWorkspace, scratch_strategies
from driveros.sandbox import DockerSandbox, LocalSandbox
from driveros.state import mounts_under
from tests.review._repo import hand_over, make_repo, write_files
from tests.sandbox.conftest import require_docker

pytestmark = pytest.mark.skipif(
    scratch_strategies()["overlay"] is not None,
    reason=f"no kernel overlay here: {scratch_strategies()['overlay']}",
)

SECRET = "API_TOKEN=sk-live-0123456789abcdef"

#: Ignored paths that must not be in the view (relative to the repository).
HIDDEN = [
    ".env",
    ".env.local",
    "build",
    "build/bundle.js",
    "out/deep/nested/key.pem",
    "src/debug.log",
    "src/cache/blob.bin",
]


def _repo(root: Path) -> Path:
    repo = make_repo(
        root,
        {
            ".gitignore": ".env*\nbuild/\nout/\n*.log\nsrc/cache/\n.venv/\nnode_modules/\n",
            "app.py": "print(1)\n",
            "src/lib.py": "L = 1\n",
            "src/gone.py": "G = 1\n",
            "docs/readme.md": "# r\n",
        },
    )
    write_files(
        repo,
        {
            ".env": f"{SECRET}\n",
            ".env.local": f"{SECRET}\n",
            "build/bundle.js": f"const t = '{SECRET}';\n",
            "out/deep/nested/key.pem": "-----BEGIN PRIVATE KEY-----\n",
            "src/debug.log": f"{SECRET}\n",
            "src/cache/blob.bin": b"\x00secret",
            ".venv/pyvenv.cfg": "home = /usr/bin\n",
            ".venv/bin/tool": "#!/bin/sh\necho tool\n",
            "node_modules/left/index.js": "module.exports = 1\n",
            "untracked.txt": "u\n",
        },
    )
    return repo


def _assert_hidden(view: Path, *, src: tuple[str, ...] = ("gone.py", "lib.py")) -> None:
    for rel in HIDDEN:
        assert not os.path.lexists(view / rel), rel
    assert sorted(os.listdir(view / "src")) == sorted(src)


async def test_a_view_hides_ignored_files_and_shows_environments(
    tmp_path: Path, scratch_base: Path
) -> None:
    repo = _repo(tmp_path / "proj")
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="overlay") as s:
        assert s.strategy == "overlay", s.fallback_reason
        _assert_hidden(s.path)
        # Source and untracked files are there; the environments are seen, never proposed.
        assert (s.path / "untracked.txt").read_text() == "u\n"
        assert (s.path / ".venv/bin/tool").is_file()
        assert (s.path / "node_modules/left/index.js").is_file()
        async with LocalSandbox(s.path) as box:
            for rel in HIDDEN:
                shown = await box.run(f"cat {rel}")
                assert shown.exit_code != 0 and SECRET not in shown.stdout, rel
            found = await box.run("grep -r sk-live . ; ls -a")
            assert SECRET not in found.stdout and ".env" not in found.stdout, found
        assert await s.changes() == []
        # The agent edits, deletes a tracked file and writes ignored files: no whiteout it did
        # not make is proposed; its deletion is.
        (s.path / "app.py").write_text("print(2)\n")
        (s.path / "src/gone.py").unlink()
        write_files(s.path, {".env": "MINE=1\n", "build/new.js": "x\n", "new.py": "N = 1\n"})
        (s.path / ".env").unlink()
        assert sorted((c.path, c.action) for c in await s.changes()) == [
            ("app.py", "modify"),
            ("new.py", "create"),
            ("src/gone.py", "delete"),
        ]
        await s.apply()
    assert not (repo / "src/gone.py").exists()
    assert (repo / ".env").read_text() == f"{SECRET}\n"
    assert (repo / "build/bundle.js").is_file() and not (repo / "build/new.js").exists()
    assert mounts_under(scratch_base) == []


async def test_hiding_keeps_the_directories_owner_and_mode(
    tmp_path: Path, scratch_base: Path
) -> None:
    """A directory the view needs in its upper layer to hide a file inside it keeps the user's
    owner and mode (a sandbox running as the owner can still write there)."""
    repo = _repo(tmp_path / "proj")
    (repo / "src").chmod(0o750)
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="overlay") as s:
        before, seen = (repo / "src").stat(), (s.path / "src").stat()
        assert (seen.st_uid, seen.st_gid) == (before.st_uid, before.st_gid)
        assert stat.S_IMODE(seen.st_mode) == 0o750


async def test_a_subdirectory_workspace_hides_the_whole_repositorys_ignored_files(
    tmp_path: Path, scratch_base: Path
) -> None:
    repo = _repo(tmp_path / "proj")
    write_files(repo, {"src/.venv/pyvenv.cfg": "home = /usr/bin\n"})
    async with await ScratchWorkspace.create(
        repo / "src", base_dir=scratch_base, strategy="overlay"
    ) as s:
        assert s.strategy == "overlay"
        _assert_hidden(s.path.parent, src=(".venv", "gone.py", "lib.py"))
        assert not os.path.lexists(s.path.parent / ".venv")  # not the workspace's
        assert (s.path / ".venv/pyvenv.cfg").is_file()
        (s.path / "lib.py").unlink()
        assert [(c.path, c.action) for c in await s.changes()] == [("lib.py", "delete")]


async def test_a_kept_view_stays_hidden_after_a_remount(tmp_path: Path, scratch_base: Path) -> None:
    repo = _repo(tmp_path / "proj")
    s = await ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="overlay")
    (s.path / "src/gone.py").unlink()
    await s.changes()
    await s.keep({"run_id": "r"})
    await s.aclose()
    assert mounts_under(s.path) == []  # a kept view is unmounted when let go of
    [kept] = await ScratchWorkspace.reopen_kept(workspace=repo)
    try:
        _assert_hidden(kept.scratch.path, src=("lib.py",))
        assert [(c.path, c.action) for c in await kept.scratch.changes()] == [
            ("src/gone.py", "delete")
        ]
    finally:
        await kept.scratch.discard()
    assert mounts_under(scratch_base) == []


async def test_a_plain_directory_view_hides_ignored_and_secret_files(
    tmp_path: Path, scratch_base: Path
) -> None:
    plain = tmp_path / "plain"
    write_files(
        plain,
        {
            ".gitignore": "build/\n",
            "main.py": "print(1)\n",
            ".env": f"{SECRET}\n",
            "conf/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n",
            "conf/.env.example": "API_TOKEN=\n",
            "build/out.js": f"'{SECRET}'\n",
            ".venv/pyvenv.cfg": "home = /usr/bin\n",
        },
    )
    async with await ScratchWorkspace.create(plain, base_dir=scratch_base, strategy="overlay") as s:
        assert s.strategy == "overlay", s.fallback_reason
        for rel in (".env", "conf/id_rsa", "build"):
            assert not os.path.lexists(s.path / rel), rel
        assert (s.path / "conf/.env.example").is_file()  # a template, not a secret
        assert (s.path / ".venv/pyvenv.cfg").is_file()
        assert await s.changes() == []
        (s.path / "main.py").unlink()
        assert [(c.path, c.action) for c in await s.changes()] == [("main.py", "delete")]


@pytest.mark.docker
async def test_docker_runc_cannot_read_ignored_files_of_the_view(
    tmp_path: Path, scratch_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_docker()
    repo = _repo(tmp_path / "proj")
    hand_over(repo, tmp_path / "home", monkeypatch)
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base, container="runc") as s:
        assert (s.strategy, s.fallback_reason) == ("overlay", "")
        async with DockerSandbox(s.path, private_copy=True) as box:
            found = await box.run("cat .env .env.local build/bundle.js src/debug.log; grep -r sk-")
            assert SECRET not in found.stdout + found.stderr, found
            edit = await box.run("echo x > src/new.py && rm src/gone.py && ls -a . src")
            assert edit.exit_code == 0, edit
            assert ".env" not in edit.stdout and "debug.log" not in edit.stdout, edit
        assert sorted((c.path, c.action) for c in await s.changes()) == [
            ("src/gone.py", "delete"),
            ("src/new.py", "create"),
        ]


async def test_an_ignored_workspace_is_still_there_with_its_contents_hidden(
    tmp_path: Path, scratch_base: Path
) -> None:
    """The workspace may be an ignored directory: the view keeps it and hides what is inside."""
    repo = _repo(tmp_path / "proj")
    write_files(repo, {"out/gen.py": f"T = '{SECRET}'\n"})
    async with await ScratchWorkspace.create(
        repo / "out", base_dir=scratch_base, strategy="overlay"
    ) as s:
        assert s.strategy == "overlay" and s.path.is_dir()
        assert os.listdir(s.path) == []
        _assert_hidden(s.path.parent)
        assert await s.changes() == []


async def test_removing_a_directory_with_hidden_files_proposes_its_tracked_files(
    tmp_path: Path, scratch_base: Path
) -> None:
    repo = _repo(tmp_path / "proj")
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="overlay") as s:
        subprocess.run(["rm", "-rf", str(s.path / "src")], check=True)
        assert sorted((c.path, c.action) for c in await s.changes()) == [
            ("src/gone.py", "delete"),
            ("src/lib.py", "delete"),
        ]
        write_files(s.path, {"src/lib.py": "L = 2\n"})  # an opaque directory now
        assert sorted((c.path, c.action) for c in await s.changes()) == [
            ("src/gone.py", "delete"),
            ("src/lib.py", "modify"),
        ]
        assert not os.path.lexists(s.path / "src/debug.log")
