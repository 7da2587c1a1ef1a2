"""Copy-on-write overlay scratch views: the same proposals as a worktree, from the upper layer."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from driveros.review import (
    ConflictError,
    FileChange,
    ScratchWorkspace,
    scratch_strategies,
)
from driveros.state import collect_garbage, list_leases, mounts_under
from tests.review._repo import git, make_repo, tree, write_files

pytestmark = pytest.mark.skipif(
    scratch_strategies()["overlay"] is not None,
    reason=f"no kernel overlay here: {scratch_strategies()['overlay']}",
)

_FILES: dict[str, str | bytes] = {
    ".gitignore": "*.log\n",
    "README.md": "# demo\n",
    "src/app.py": "def add(a, b):\n    return a - b\n",
    "src/util.py": "X = 1\n",
    "old/one.txt": "one\n",
    "old/two.txt": "two\n",
    "keep/name.txt": "rename me\n",
    "pkg/a.py": "A = 1\n",
    "pkg/sub/b.py": "B = 1\n",
    "bin.dat": b"\x00\x01\x02",
}


def _edit(root: Path) -> None:
    """The same agent edits, whatever the strategy: modify, create, delete a file, delete a
    whole directory, rename, replace a directory, ignored and binary files."""
    (root / "src/app.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "src/util.py").unlink()
    subprocess.run(["rm", "-rf", str(root / "old")], check=True)
    write_files(root, {"old/three.txt": "three\n"})  # re-created: an opaque directory
    os.rename(root / "keep/name.txt", root / "keep/renamed.txt")
    # A directory rename (overlayfs answers EXDEV or redirects; mv copes with both).
    subprocess.run(["mv", str(root / "pkg"), str(root / "moved")], check=True)
    write_files(root, {"new/deep/file.py": "print('hi')\n", "debug.log": "ignored\n"})
    (root / "bin.dat").write_bytes(b"\x00\x09")


def _key(changes: list[FileChange]) -> list[tuple[object, ...]]:
    return [
        (c.path, c.action, c.old_path, c.diff, c.before_sha, c.after_sha, c.mode, c.binary)
        for c in changes
    ]


def _mounted(path: Path) -> bool:
    return str(path) in mounts_under(path)


async def test_overlay_gives_the_same_changes_as_a_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", _FILES)
    write_files(repo, {"src/app.py": "def add(a, b):\n    return a - b  # dirty\n", "u.txt": "u\n"})
    base = tmp_path / "scratch"
    base.mkdir()
    results = {}
    for strategy in ("worktree", "overlay"):
        async with await ScratchWorkspace.create(
            repo, base_dir=base, strategy=strategy, overlays={"buf.py": "B = 1\n"}
        ) as scratch:
            assert scratch.strategy == strategy
            assert tree(scratch.path) == {**tree(repo), "buf.py": b"B = 1\n"}
            assert await scratch.changes() == []
            _edit(scratch.path)
            results[strategy] = _key(await scratch.changes())
    assert results["overlay"] == results["worktree"]
    actions = {(p, a, o) for p, a, o, *_ in results["overlay"]}
    assert ("keep/renamed.txt", "rename", "keep/name.txt") in actions
    assert ("moved/sub/b.py", "rename", "pkg/sub/b.py") in actions
    assert ("old/three.txt", "create", None) in actions
    assert ("old/one.txt", "delete", None) in actions and ("src/util.py", "delete", None) in actions
    assert not any(p.endswith(".log") for p, *_ in results["overlay"])
    assert list(base.iterdir()) == []


async def test_overlay_reads_nothing_but_the_upper_layer(
    tmp_path: Path, scratch_base: Path
) -> None:
    repo = make_repo(
        tmp_path / "proj", {f"d{i}/f{j}.txt": f"{i}{j}\n" for i in range(5) for j in range(40)}
    )
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="overlay") as s:
        upper = s._lay.upper
        assert list(upper.iterdir()) == []  # nothing copied in
        (s.path / "d1/f1.txt").write_text("changed\n")
        assert [p.relative_to(upper).as_posix() for p in upper.rglob("*") if p.is_file()] == [
            "d1/f1.txt"
        ]
        assert [c.path for c in await s.changes()] == ["d1/f1.txt"]


async def test_overlay_big_untracked_file_is_never_copied(
    tmp_path: Path, scratch_base: Path
) -> None:
    repo = make_repo(tmp_path / "proj", {"a.py": "A = 1\n"})
    big = repo / "dump.bin"
    with open(big, "wb") as fh:
        fh.truncate(64 * 1024 * 1024)
    async with await ScratchWorkspace.create(
        repo, base_dir=scratch_base, strategy="overlay", max_file_size=1024
    ) as s:
        assert s.left_out == ("dump.bin",)
        assert (s.path / "dump.bin").stat().st_size == 64 * 1024 * 1024  # seen, read-only
        assert not (s._lay.upper / "dump.bin").exists()
        assert await s.changes() == []
        # No object was stored for it either.
        out = git(s._lay.git_dir, "count-objects", "-v")
        assert "size-pack: 0" in out and "\ncount: 0\n" in f"\n{out}"


async def test_overlay_buffers_land_in_upper_and_apply_compares_disk(
    repo: Path, scratch_base: Path
) -> None:
    async with await ScratchWorkspace.create(
        repo, base_dir=scratch_base, strategy="overlay", overlays={"src/app.py": "unsaved\n"}
    ) as s:
        assert (s._lay.upper / "src/app.py").read_text() == "unsaved\n"
        assert (repo / "src/app.py").read_text() == "def add(a, b):\n    return a - b\n"
        (s.path / "src/app.py").write_text("agent\n")
        [change] = await s.changes()
        assert (change.before, change.after) == ("unsaved\n", "agent\n")
        await s.apply()  # compared with the user's file on disk at start: unchanged
    assert (repo / "src/app.py").read_text() == "agent\n"


async def test_overlay_user_edits_during_the_run(repo: Path, scratch_base: Path) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="overlay") as s:
        (s.path / "src/app.py").write_text("agent\n")
        (repo / "src/app.py").write_text("user\n")  # both changed it: a conflict
        (repo / "src/util.py").write_text("X = 2\n")  # only the user: not the agent's change
        assert [c.path for c in await s.changes()] == ["src/app.py"]
        with pytest.raises(ConflictError):
            await s.apply()
    assert (repo / "src/app.py").read_text() == "user\n"


async def test_overlay_never_writes_the_users_git(repo: Path, scratch_base: Path) -> None:
    head, index = git(repo, "rev-parse", "HEAD"), (repo / ".git/index").read_bytes()
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="overlay") as s:
        (s.path / "src/app.py").write_text("agent\n")
        git(s.path, "add", "-A")
        git(s.path, "commit", "-qm", "agent commit in the view")
        (s.path / ".git/hooks/pre-commit").write_text("#!/bin/sh\n")
        changes = await s.changes()
        assert [c.path for c in changes] == ["src/app.py"]
        assert not any(".git" in p.split("/") for c in changes for p in c.paths)
    assert git(repo, "rev-parse", "HEAD") == head
    assert (repo / ".git/index").read_bytes() == index
    assert not (repo / ".git/hooks/pre-commit").exists()


async def test_overlay_environment_writes_stay_in_the_view(
    tmp_path: Path, scratch_base: Path
) -> None:
    repo = make_repo(tmp_path / "proj", {".gitignore": ".venv/\n", "a.py": "A = 1\n"})
    write_files(repo, {".venv/pyvenv.cfg": "home = /usr\n", ".venv/lib/mod.py": "M = 1\n"})
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="overlay") as s:
        assert s.environments == (".venv",)
        assert not (s.path / ".venv").is_symlink()
        write_files(s.path, {".venv/lib/__pycache__/mod.pyc": b"\x00", ".venv/lib/mod.py": "M=2\n"})
        assert await s.changes() == []
    assert (repo / ".venv/lib/mod.py").read_text() == "M = 1\n"
    assert not (repo / ".venv/lib/__pycache__").exists()


async def test_overlay_subdirectory_workspace(repo: Path, scratch_base: Path) -> None:
    async with await ScratchWorkspace.create(
        repo / "src", base_dir=scratch_base, strategy="overlay"
    ) as s:
        assert s.strategy == "overlay"
        assert sorted(tree(s.path)) == ["app.py", "util.py"]
        (s.path / "app.py").write_text("x\n")
        (s.path.parent / "README.md").write_text("outside the workspace\n")
        assert [c.path for c in await s.changes()] == ["app.py"]
        await s.apply()
    assert (repo / "src/app.py").read_text() == "x\n"
    assert (repo / "README.md").read_text() == "# demo\n"


async def test_overlay_unmounted_and_removed_on_close_and_cancel(
    repo: Path, scratch_base: Path
) -> None:
    s = await ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="overlay")
    assert _mounted(s.path)
    await s.aclose()
    assert not _mounted(s.path)
    assert list(scratch_base.iterdir()) == []

    started = asyncio.Event()
    paths: list[Path] = []

    async def run() -> None:
        async with await ScratchWorkspace.create(
            repo, base_dir=scratch_base, strategy="overlay"
        ) as scratch:
            paths.append(scratch.path)
            (scratch.path / "src/app.py").write_text("edited\n")
            started.set()
            await asyncio.sleep(3600)

    task = asyncio.create_task(run())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not _mounted(paths[0])
    assert list(scratch_base.iterdir()) == []
    assert (repo / "src/app.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert await list_leases() == []


_HOLD = """
import asyncio, sys
from pathlib import Path
from driveros.review import ScratchWorkspace

async def main() -> None:
    s = await ScratchWorkspace.create(Path(sys.argv[1]), base_dir=Path(sys.argv[2]),
                                      strategy="overlay")
    (s.path / "a.py").write_text("A = 2\\n")
    print(s.path, flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


async def test_gc_unmounts_the_view_of_a_killed_owner(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"a.py": "A = 1\n", ".gitignore": "*.log\n"})
    write_files(repo, {"run.log": "hidden\n"})  # so the view has a hide layer
    base = tmp_path / "scratch"
    base.mkdir()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _HOLD, str(repo), str(base), stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    merged = Path((await proc.stdout.readline()).decode().strip())
    proc.send_signal(signal.SIGKILL)
    await proc.wait()
    assert _mounted(merged)  # a stale mount outlives its process
    [lease] = await list_leases()
    registered = [Path(p) for p in lease.record.paths]
    assert registered[0] == merged.parent and all(p.exists() for p in registered)

    report = await collect_garbage()

    assert [(c.kind, c.reason) for c in report.removed] == [("scratch", "owner_gone")]
    assert report.errors == []
    assert not _mounted(merged)
    assert list(base.iterdir()) == []
    assert not any(os.path.lexists(p) for p in registered)  # the hide layer on a tmpfs too
    assert (repo / "a.py").read_text() == "A = 1\n"


async def test_kept_overlay_is_mounted_again_after_a_reboot(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"a.py": "A = 1\n"})
    s = await ScratchWorkspace.create(repo, base_dir=tmp_path, strategy="overlay")
    (s.path / "a.py").write_text("A = 2\n")
    await s.changes()
    await s.keep({"run_id": "r"})
    await s.aclose()
    merged = s.path
    assert not _mounted(merged)  # let go of with its process, as a reboot would
    [kept] = await ScratchWorkspace.reopen_kept(workspace=repo)
    assert _mounted(merged)
    assert [(c.path, c.after) for c in await kept.scratch.changes()] == [("a.py", "A = 2\n")]
    await kept.scratch.discard()
    assert not _mounted(merged)
    assert await list_leases() == []


async def test_overlay_falls_back_with_a_reason(tmp_path: Path, scratch_base: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"a.txt": "a\n"})
    inside = repo / "scratch-inside"
    inside.mkdir()
    async with await ScratchWorkspace.create(repo, base_dir=inside, strategy="overlay") as s:
        assert s.strategy == "worktree"
        assert "overlap" in s.fallback_reason
    # A linked worktree's .git is a file pointing into the user's git directory: git in a
    # view would write the user's index and HEAD there, so it gets a worktree of its own.
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "--detach", str(linked))
    async with await ScratchWorkspace.create(linked, base_dir=scratch_base) as s:
        assert s.strategy == "worktree"
        assert ".git is not a directory" in s.fallback_reason


async def test_plain_directory_view(tmp_path: Path, scratch_base: Path) -> None:
    plain = tmp_path / "plain"
    files: dict[str, str | bytes] = {
        ".gitignore": "*.tmp\n",
        "a.txt": "a\n",
        "d/b.txt": "b\n",
        "x.tmp": "t\n",
        "big": b"\0" * 4096,
    }
    write_files(plain, files)
    before = tree(plain)
    async with await ScratchWorkspace.create(plain, base_dir=scratch_base, max_file_size=1024) as s:
        assert (s.strategy, s.fallback_reason) == ("overlay", "")
        # What a copy would leave out (the ignored x.tmp) is hidden; a big file is seen.
        seen = {k: v for k, v in before.items() if k != "x.tmp"}
        assert _mounted(s.path) and tree(s.path) == seen
        assert s.left_out == ("big",)
        (s.path / "a.txt").write_text("A\n")
        subprocess.run(["rm", "-rf", str(s.path / "d")], check=True)
        write_files(s.path, {"new.txt": "n\n", "y.tmp": "ignored\n"})
        assert sorted((c.path, c.action) for c in await s.changes()) == [
            ("a.txt", "modify"),
            ("d/b.txt", "delete"),
            ("new.txt", "create"),
        ]
        assert tree(plain) == before  # nothing reached the user's directory
        await s.apply()
    assert not (plain / "d").exists() and (plain / "a.txt").read_text() == "A\n"
    assert list(scratch_base.iterdir()) == []


async def test_auto_prefers_the_overlay_and_env_var_selects(
    repo: Path, scratch_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DRIVEROS_SCRATCH_STRATEGY", "auto")
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as s:
        assert (s.strategy, s.fallback_reason) == ("overlay", "")
    monkeypatch.setenv("DRIVEROS_SCRATCH_STRATEGY", "worktree")
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as s:
        assert s.strategy == "worktree" and s.is_worktree
    monkeypatch.setenv("DRIVEROS_SCRATCH_STRATEGY", "copy")
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as s:
        assert s.strategy == "copy" and not s.is_worktree


async def test_cli_review_run_on_an_overlay_says_so(tmp_path: Path) -> None:
    import json

    from driveros.testing import ScriptedModelServer, Turn
    from tests.cli.conftest import cli_environ, start_cli

    repo = make_repo(tmp_path / "repo", {"a.py": "A = 1\n"})
    args = ("--task", "t", "--review", "--review-action", "discard", "--provider", "openai")
    async with ScriptedModelServer([Turn(text="ok"), Turn(text="ok")]) as model:
        for wanted, got in (("overlay", "overlay"), ("auto", "overlay"), ("worktree", "worktree")):
            env = cli_environ(model) | {"DRIVEROS_SCRATCH_STRATEGY": wanted}
            proc = await start_cli(*args, "--format", "ndjson", env=env, cwd=repo)
            out, err = await proc.communicate()
            assert proc.returncode in (0, 2), err.decode()
            events = [json.loads(line) for line in out.decode().splitlines()]
            started = [e for e in events if e["type"] == "run_started"]
            assert [(e["scratch"], e["scratch_fallback"]) for e in started] == [(got, "")]
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


_TWICE = """
import asyncio, sys
from pathlib import Path
from driveros.review import ScratchWorkspace, scratch_strategies

async def main() -> None:
    ws, base = Path(sys.argv[1]), Path(sys.argv[2])
    for _ in range(2):
        async with await ScratchWorkspace.create(ws, base_dir=base) as s:
            print(s.strategy, s.fallback_reason.replace("\\n", " "), sep="|")
    print("probe", scratch_strategies()["overlay"], sep="|")

asyncio.run(main())
"""


async def test_root_without_the_mount_privilege_learns_it_once(tmp_path: Path) -> None:
    """Root in a container without CAP_SYS_ADMIN: the first run's mount is refused and falls
    back with the kernel's reason; later runs of the process do not try again."""
    import shutil

    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("needs setpriv (util-linux) to drop CAP_SYS_ADMIN")
    repo = make_repo(tmp_path / "proj", {"a.py": "A = 1\n"})
    base = tmp_path / "scratch"
    base.mkdir()
    drop = ["--inh-caps=-sys_admin", "--bounding-set=-sys_admin"]
    proc = await asyncio.create_subprocess_exec(
        setpriv,
        *drop,
        sys.executable,
        "-c",
        _TWICE,
        str(repo),
        str(base),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    first, second, probe = (line.split("|", 1) for line in out.decode().splitlines())
    assert first[0] == second[0] == "worktree"
    assert "permission denied" in first[1]
    assert second[1].startswith("the kernel refused to mount an overlay here")
    assert probe[1] == second[1]
    assert list(base.iterdir()) == [] and mounts_under(base) == []
