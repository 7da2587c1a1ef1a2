"""combined_patch: the changes' diffs as one patch git applies whole."""

from __future__ import annotations

import subprocess
from pathlib import Path

from driveros.review import ScratchWorkspace, combined_patch


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


async def test_combined_patch_applies_every_change_with_git(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("x = 1")  # no final newline
    (repo / "b.py").write_text("y = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init")
    async with await ScratchWorkspace.create(repo) as scratch:
        (scratch.path / "a.py").write_text("x = 2")
        (scratch.path / "b.py").unlink()
        (scratch.path / "c.py").write_text("z = 3\n")
        patch = combined_patch(await scratch.changes())
    assert combined_patch([]) == ""
    (tmp_path / "all.patch").write_text(patch)
    _git(repo, "apply", str(tmp_path / "all.patch"))
    assert (repo / "a.py").read_text() == "x = 2"
    assert not (repo / "b.py").exists()
    assert (repo / "c.py").read_text() == "z = 3\n"
