"""A user whose repository keeps a split index (``core.splitIndex``) gets a scratch copy of
every strategy: the private repository starts from the user's index with the shared index it
names, and the user's index is never changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from driveros.review import ScratchWorkspace, scratch_strategies
from tests.review._repo import git, make_repo


@pytest.mark.parametrize("strategy", ["worktree", "copy", "overlay"])
async def test_a_split_index_repository_gets_a_working_copy(
    tmp_path: Path, scratch_base: Path, strategy: str
) -> None:
    if scratch_strategies().get(strategy) is not None:
        pytest.skip(f"{strategy} is unavailable here: {scratch_strategies()[strategy]}")
    repo = make_repo(tmp_path / "proj", {"a.txt": "a\n", "src/b.py": "B = 1\n"})
    git(repo, "config", "core.splitIndex", "true")
    git(repo, "update-index", "--split-index")
    (repo / "a.txt").write_text("dirty\n")  # the copy starts from the user's state
    before = git(repo, "ls-files", "-s", "--debug")
    async with await ScratchWorkspace.create(
        repo, base_dir=scratch_base, strategy=strategy
    ) as scratch:
        assert (scratch.path / "a.txt").read_text() == "dirty\n"
        (scratch.path / "src/b.py").write_text("B = 2\n")
        changes = {c.path: c.action for c in await scratch.changes()}
    assert changes == {"src/b.py": "modify"}
    assert git(repo, "ls-files", "-s", "--debug") == before
