"""Review actions: apply, commit, discard, conflicts (nothing partially written)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

import driveros.review._scratch as scratch_module
from driveros.review import (
    ConflictError,
    NotARepositoryError,
    ReviewError,
    ScratchClosedError,
    ScratchWorkspace,
    UnknownPathError,
)
from tests.review._repo import git, tree, write_files

FIXED = "def add(a, b):\n    return a + b\n"


def _agent_edits(p: Path) -> None:
    (p / "src/app.py").write_text(FIXED)
    (p / "src/util.py").rename(p / "src/helpers.py")
    (p / "README.md").unlink()
    write_files(p, {"docs/new.md": "# new\n"})
    (p / "bin").mkdir()
    (p / "bin/tool").write_text("#!/bin/sh\n")
    (p / "bin/tool").chmod(0o755)


async def test_apply_writes_every_change(repo: Path, scratch_base: Path) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        _agent_edits(scratch.path)
        expected = tree(scratch.path)
        result = await scratch.apply()
        assert result.applied == [
            "README.md",
            "bin/tool",
            "docs/new.md",
            "src/app.py",
            "src/helpers.py",
        ]
        # Applied once: a second apply() has nothing left to write.
        assert (await scratch.apply()).applied == []
    assert tree(repo) == expected
    assert os.access(repo / "bin/tool", os.X_OK)
    assert "?? docs/" in git(repo, "status", "--porcelain")  # unstaged: the user reviews in git


async def test_apply_subset_by_path(repo: Path, scratch_base: Path) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        _agent_edits(scratch.path)
        await scratch.changes()
        result = await scratch.apply(["src/util.py"])  # either side of a rename selects it
        assert result.applied == ["src/helpers.py"]
    assert (repo / "src/helpers.py").read_text() == "X = 1\n"
    assert not (repo / "src/util.py").exists()
    assert (repo / "src/app.py").read_text() != FIXED
    assert (repo / "README.md").exists()


async def test_apply_conflict_writes_nothing(repo: Path, scratch_base: Path) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        _agent_edits(scratch.path)
        # Meanwhile the user edits one file the agent changed and creates one it created.
        (repo / "src/app.py").write_text("def add(a, b):\n    return b + a  # user\n")
        write_files(repo, {"docs/new.md": "# the user's own\n"})
        before = tree(repo)
        with pytest.raises(ConflictError) as info:
            await scratch.apply()
        err = info.value
        assert sorted((c.path, c.reason) for c in err.conflicts) == [
            ("docs/new.md", "created in the workspace since the run started"),
            ("src/app.py", "changed in the workspace since the run started"),
        ]
        assert err.clean == ["README.md", "bin/tool", "src/helpers.py"]
        assert tree(repo) == before  # not one byte written
        assert not list(repo.rglob("*.driveros.tmp"))
        # The clean part still applies when asked for explicitly.
        result = await scratch.apply(err.clean)
        assert result.applied == err.clean
    assert (repo / "src/app.py").read_text().endswith("# user\n")
    assert (repo / "src/helpers.py").exists()


async def test_apply_conflict_on_deleted_and_rename_source(repo: Path, scratch_base: Path) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        _agent_edits(scratch.path)
        (repo / "src/app.py").unlink()
        (repo / "src/util.py").write_text("X = 2\n")
        with pytest.raises(ConflictError) as info:
            await scratch.apply(["src/app.py", "src/helpers.py"])
        assert {c.path: c.reason for c in info.value.conflicts} == {
            "src/app.py": "deleted in the workspace since the run started",
            "src/util.py": "changed in the workspace since the run started",
        }
    assert not (repo / "src/helpers.py").exists()


async def test_apply_same_change_by_user_is_not_a_conflict(repo: Path, scratch_base: Path) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        (scratch.path / "src/app.py").write_text(FIXED)
        (repo / "src/app.py").write_text(FIXED)
        assert (await scratch.apply()).applied == ["src/app.py"]
    assert (repo / "src/app.py").read_text() == FIXED


async def test_apply_overlay_compares_disk_not_buffer(repo: Path, scratch_base: Path) -> None:
    buffer = "def add(a, b):\n    return a - b  # unsaved edit\n"
    async with await ScratchWorkspace.create(
        repo, overlays={"src/app.py": buffer}, base_dir=scratch_base
    ) as scratch:
        (scratch.path / "src/app.py").write_text(buffer + "# agent\n")
        (change,) = await scratch.changes()
        assert change.before == buffer
        await scratch.apply()
    assert (repo / "src/app.py").read_text() == buffer + "# agent\n"


async def test_commit_only_selected_paths(repo: Path, scratch_base: Path) -> None:
    write_files(repo, {"user_staged.txt": "mine\n"})
    git(repo, "add", "user_staged.txt")
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        _agent_edits(scratch.path)
        await scratch.changes()
        chosen = ["README.md", "bin/tool", "src/app.py", "src/helpers.py"]  # not docs/new.md
        result = await scratch.commit("agent: fix add", chosen)
    assert result.commit == git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "log", "-1", "--format=%s").strip() == "agent: fix add"
    shown = git(repo, "show", "--no-renames", "--name-status", "--format=", "HEAD").split("\n")
    assert sorted(line for line in shown if line) == [
        "A\tbin/tool",
        "A\tsrc/helpers.py",
        "D\tREADME.md",
        "D\tsrc/util.py",
        "M\tsrc/app.py",
    ]
    # The user's own staged file stays staged and uncommitted; the rejected file is not written.
    assert git(repo, "diff", "--cached", "--name-only").strip() == "user_staged.txt"
    assert not (repo / "docs/new.md").exists()


async def test_commit_outside_repository_writes_nothing(tmp_path: Path, scratch_base: Path) -> None:
    ws = tmp_path / "plain"
    write_files(ws, {"a.txt": "a\n"})
    async with await ScratchWorkspace.create(ws, base_dir=scratch_base) as scratch:
        (scratch.path / "a.txt").write_text("b\n")
        with pytest.raises(NotARepositoryError):
            await scratch.commit("msg")
    assert (ws / "a.txt").read_text() == "a\n"


async def test_commit_needs_message(repo: Path, scratch_base: Path) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        (scratch.path / "src/app.py").write_text(FIXED)
        with pytest.raises(ReviewError, match="message"):
            await scratch.commit("  ")


async def test_discard_leaves_workspace_untouched(repo: Path, scratch_base: Path) -> None:
    before = tree(repo)
    scratch = await ScratchWorkspace.create(repo, base_dir=scratch_base)
    _agent_edits(scratch.path)
    await scratch.changes()
    await scratch.discard()
    assert scratch.closed
    assert tree(repo) == before
    assert list(scratch_base.iterdir()) == []
    with pytest.raises(ScratchClosedError):
        await scratch.apply()


async def test_apply_without_paths_writes_what_is_not_applied_yet(
    repo: Path, scratch_base: Path
) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        (scratch.path / "src/app.py").write_text(FIXED)
        write_files(scratch.path, {"docs/new.md": "# new\n"})
        await scratch.changes()
        with pytest.raises(UnknownPathError):
            await scratch.apply(["nope.py"])
        assert (await scratch.apply(["src/app.py"])).applied == ["src/app.py"]
        assert (await scratch.apply()).applied == ["docs/new.md"]
        assert (await scratch.apply()).applied == []
    assert (repo / "src/app.py").read_text() == FIXED
    assert (repo / "docs/new.md").read_text() == "# new\n"


async def test_apply_refuses_paths_escaping_via_symlinked_dir(
    tmp_path: Path, scratch_base: Path
) -> None:
    ws = tmp_path / "plain"
    outside = tmp_path / "outside"
    outside.mkdir()
    write_files(ws, {"a.txt": "a\n"})
    async with await ScratchWorkspace.create(ws, base_dir=scratch_base) as scratch:
        write_files(scratch.path, {"linked/evil.txt": "x\n"})
        (ws / "linked").symlink_to(outside)  # the user's tree now routes the path elsewhere
        with pytest.raises(ConflictError, match=r"linked/evil\.txt"):
            await scratch.apply()
    assert list(outside.iterdir()) == []


async def test_commit_with_untracked_deletion_and_unicode_paths(
    repo: Path, scratch_base: Path
) -> None:
    write_files(repo, {"scratch notes.txt": "untracked\n"})
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        (scratch.path / "scratch notes.txt").unlink()
        write_files(scratch.path, {"docs/naïve café.md": "ünïcödé\n", "a[1]*.txt": "glob\n"})
        changes = await scratch.changes()
        assert [(c.path, c.action) for c in changes] == [
            ("a[1]*.txt", "create"),
            ("docs/naïve café.md", "create"),
            ("scratch notes.txt", "delete"),
        ]
        result = await scratch.commit("agent: unicode", ["docs/naïve café.md", "scratch notes.txt"])
    assert result.applied == ["docs/naïve café.md", "scratch notes.txt"]
    assert not (repo / "scratch notes.txt").exists()
    shown = git(repo, "-c", "core.quotePath=false", "show", "--name-only", "--format=", "HEAD")
    assert shown.split("\n")[0] == "docs/naïve café.md"
    assert git(repo, "status", "--porcelain") == ""
    # A name full of glob characters is committed as itself, not as a pattern.
    write_files(repo, {"a1x.txt": "the user's, untracked\n"})  # matches the name as a glob
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        write_files(scratch.path, {"a[1]*.txt": "glob\n"})
        await scratch.commit("agent: glob name", ["a[1]*.txt"])
    assert git(repo, "show", "--name-only", "--format=", "HEAD").strip() == "a[1]*.txt"
    assert git(repo, "status", "--porcelain").strip() == "?? a1x.txt"


async def test_commit_of_untracked_deletion_only_makes_no_commit(
    repo: Path, scratch_base: Path
) -> None:
    write_files(repo, {"tmp.txt": "untracked\n"})
    head = git(repo, "rev-parse", "HEAD")
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        (scratch.path / "tmp.txt").unlink()
        result = await scratch.commit("agent: tidy")
    assert result.applied == ["tmp.txt"]
    assert result.commit is None
    assert git(repo, "rev-parse", "HEAD") == head


async def test_apply_refuses_when_a_directory_or_file_is_in_the_way(
    repo: Path, scratch_base: Path
) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        write_files(scratch.path, {"out.txt": "agent\n", "docs/new.md": "# new\n"})
        (scratch.path / "src/app.py").write_text(FIXED)
        (repo / "out.txt").mkdir()  # the user made a directory where the agent wants a file
        (repo / "docs").write_text("a file where the agent wants a directory\n")
        (scratch.path / "README.md").unlink()
        (repo / "README.md").unlink()
        (repo / "README.md").mkdir()  # and a directory where the agent deletes a file
        before = tree(repo)
        with pytest.raises(ConflictError) as info:
            await scratch.apply()
        assert {c.path: c.reason for c in info.value.conflicts} == {
            "README.md": "now a directory in the workspace",
            "docs/new.md": "docs is a file in the workspace, where the change needs a directory",
            "out.txt": "a directory is in the way",
        }
        assert info.value.clean == ["src/app.py"]
        assert tree(repo) == before


async def test_apply_executable_bit_change(repo: Path, scratch_base: Path) -> None:
    write_files(repo, {"tool.sh": "#!/bin/sh\n"})
    (repo / "tool.sh").chmod(0o640)
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        (scratch.path / "tool.sh").chmod(0o750)
        (change,) = await scratch.changes()
        assert (change.action, change.mode, change.before == change.after) == (
            "modify",
            "100755",
            True,
        )
        await scratch.apply()
    assert (repo / "tool.sh").stat().st_mode & 0o777 == 0o750


async def test_a_canceled_apply_records_what_it_wrote(
    repo: Path, scratch_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = scratch_module.apply_changes
    writing = asyncio.Event()
    loop = asyncio.get_running_loop()

    def slow_apply(*args: object) -> list[str]:
        loop.call_soon_threadsafe(writing.set)
        time.sleep(0.3)  # the files land after the caller was canceled
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(scratch_module, "apply_changes", slow_apply)
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        (scratch.path / "src/app.py").write_text(FIXED)
        applying = asyncio.create_task(scratch.apply())
        await writing.wait()
        applying.cancel()
        with pytest.raises(asyncio.CancelledError):
            await applying
        assert (repo / "src/app.py").read_text() == FIXED
        # Written and recorded together: nothing is offered a second time.
        assert (await scratch.apply()).applied == []


async def test_commit_refused_by_a_hook_says_the_files_are_written(
    repo: Path, scratch_base: Path
) -> None:
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'no commits today' >&2\nexit 1\n")
    hook.chmod(0o755)
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        (scratch.path / "src/app.py").write_text(FIXED)
        with pytest.raises(ReviewError) as info:
            await scratch.commit("fix add")
    assert str(info.value).startswith("written to the workspace but not committed: ")
    assert info.value.context["written"] == ["src/app.py"]
    assert (repo / "src/app.py").read_text() == FIXED  # what the message says
    assert git(repo, "log", "--format=%s").strip() == "init"
