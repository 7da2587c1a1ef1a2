"""A view returned before its baseline is recorded (``defer_baseline``, what a run asks for):
the baseline is still the user's files, never what is written in the view meanwhile, and a
copy closed or failing meanwhile leaves nothing behind."""

from __future__ import annotations

import shutil
import subprocess
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


@pytest.fixture(params=["repository", "plain"])
def workspace(request: pytest.FixtureRequest, repo: Path, tmp_path: Path) -> Path:
    """The review fixture's repository, or the same files in a plain directory (no .git)."""
    if request.param == "repository":
        return repo
    plain = tmp_path / "plain"
    shutil.copytree(repo, plain, ignore=shutil.ignore_patterns(".git"))
    return plain


async def _deferred(repo: Path, base: Path) -> ScratchWorkspace:
    scratch = await ScratchWorkspace.create(
        repo, base_dir=base, strategy="overlay", defer_baseline=True
    )
    assert scratch.strategy == "overlay"
    return scratch


async def test_what_is_written_in_the_view_meanwhile_is_a_change(
    workspace: Path, scratch_base: Path
) -> None:
    repo = workspace
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


async def test_a_user_edit_after_the_baseline_is_a_conflict(
    workspace: Path, scratch_base: Path
) -> None:
    repo = workspace
    async with await _deferred(repo, scratch_base) as scratch:
        await scratch.baseline_recorded()
        write_files(scratch.path, {"src/app.py": "AGENT = 1\n"})
        write_files(repo, {"src/app.py": "USER = 1\n"})
        before = tree(repo)
        with pytest.raises(ConflictError):
            await scratch.apply()
        assert tree(repo) == before


async def test_closed_while_recording_leaves_nothing(workspace: Path, scratch_base: Path) -> None:
    scratch = await _deferred(workspace, scratch_base)
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


async def test_a_plain_directorys_hidden_secret_is_never_hashed(
    tmp_path: Path, scratch_base: Path
) -> None:
    # A plain directory's baseline is read from the directory itself (not the view): what the
    # view hides (an untracked secret file, an ignored one) must stay out of it all the same.
    plain = tmp_path / "plain"
    write_files(
        plain,
        {
            ".gitignore": "*.log\n",
            "app.py": "X = 1\n",
            ".env": "TOKEN=sk-hidden-0123456789\n",
            "run.log": "LOGGED-0123456789\n",
        },
    )
    async with await _deferred(plain, scratch_base) as scratch:
        private = next(scratch_base.iterdir()) / "state" / "git"

        def objects() -> bytes:
            return subprocess.run(
                ["git", f"--git-dir={private}", "cat-file", "--batch-all-objects", "--batch"],
                capture_output=True,
                check=True,
            ).stdout

        assert objects() == b""  # returned as soon as it was mounted: nothing hashed yet
        await scratch.baseline_recorded()
        assert not (scratch.path / ".env").exists() and (scratch.path / "app.py").exists()
        listed = objects()
        assert b"X = 1" in listed  # the baseline was hashed ...
        assert b"sk-hidden" not in listed and b"LOGGED" not in listed  # ... without them
        write_files(scratch.path, {"app.py": "X = 2\n"})
        assert [(c.path, c.action) for c in await scratch.changes()] == [("app.py", "modify")]
