"""A view returned before its baseline is recorded (``defer_baseline``, what a run asks for):
the baseline is still the user's files, never what is written in the view meanwhile, and a
copy closed or failing meanwhile leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from driveros import DriverosError
from driveros.review import ConflictError, ScratchWorkspace, scratch_strategies
from driveros.state import list_leases, mounts_under
from tests.review._repo import git, tree, write_files

pytestmark = pytest.mark.skipif(
    scratch_strategies()["overlay"] is not None,
    reason=f"no kernel overlay here: {scratch_strategies()['overlay']}",
)


async def _deferred(repo: Path, base: Path) -> ScratchWorkspace:
    scratch = await ScratchWorkspace.create(
        repo, base_dir=base, strategy="overlay", defer_baseline=True
    )
    assert scratch.strategy == "overlay"
    return scratch


async def test_what_is_written_in_the_view_meanwhile_is_a_change(
    repo: Path, scratch_base: Path
) -> None:
    # The user's own uncommitted edit and new file: the baseline holds them ...
    write_files(repo, {"src/app.py": "def add(a, b):\n    return a + b  # user\n", "n.txt": "u\n"})
    async with await _deferred(repo, scratch_base) as scratch:
        # ... while the agent, at once, changes both, deletes one file and creates another.
        write_files(scratch.path, {"src/app.py": "AGENT = 1\n", "n.txt": "agent\n"})
        (scratch.path / "src/util.py").unlink()
        write_files(scratch.path, {"docs/new.md": "# new\n"})
        changes = {c.path: c.action for c in await scratch.changes()}
        assert changes == {
            "docs/new.md": "create",
            "n.txt": "modify",
            "src/app.py": "modify",
            "src/util.py": "delete",
        }
        by_path = {c.path: c for c in await scratch.changes()}
        assert "-    return a + b  # user" in by_path["src/app.py"].diff


async def test_a_user_edit_after_the_baseline_is_a_conflict(repo: Path, scratch_base: Path) -> None:
    async with await _deferred(repo, scratch_base) as scratch:
        await scratch.baseline_recorded()
        write_files(scratch.path, {"src/app.py": "AGENT = 1\n"})
        write_files(repo, {"src/app.py": "USER = 1\n"})
        before = tree(repo)
        with pytest.raises(ConflictError):
            await scratch.apply()
        assert tree(repo) == before


async def test_closed_while_recording_leaves_nothing(repo: Path, scratch_base: Path) -> None:
    scratch = await _deferred(repo, scratch_base)
    await scratch.aclose()
    assert list(scratch_base.iterdir()) == []
    assert mounts_under(scratch_base) == []
    assert await list_leases() == []


async def test_a_baseline_that_cannot_be_recorded_fails_and_leaves_nothing(
    repo: Path, scratch_base: Path
) -> None:
    # HEAD's tree is gone from the object store: the view mounts, the baseline cannot be read.
    head_tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    (repo / ".git" / "objects" / head_tree[:2] / head_tree[2:]).unlink()
    with pytest.raises(DriverosError):
        await ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="overlay")
    assert list(scratch_base.iterdir()) == []
    scratch = await _deferred(repo, scratch_base)
    with pytest.raises(DriverosError):
        await scratch.changes()
    await scratch.aclose()
    assert list(scratch_base.iterdir()) == []
    assert mounts_under(scratch_base) == []
    assert await list_leases() == []
