"""Applying a run across folders (``--add-dir DIR:rw``): every folder is checked before any is
written, then each is written all or nothing, the workspace first. A write failure in a later
folder (here a read-only bind mount under its target) leaves that folder untouched and the
error names every file left written in the earlier ones."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from driveros.review import FolderViews, ReviewError, ScratchWorkspace, apply_together
from tests.faults.test_partial_apply import mount


@pytest.fixture
def folders(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    ws, other = tmp_path / "ws", tmp_path / "other"
    (ws).mkdir()
    (ws / "a.txt").write_text("a\n")
    (other / "ro").mkdir(parents=True)
    (other / "ro" / "c.txt").write_text("c\n")
    yield ws, other
    subprocess.run(["umount", "-l", str(other / "ro")], check=False, capture_output=True)


async def test_apply_together_a_later_folder_failing_names_what_was_written(
    folders: tuple[Path, Path],
) -> None:
    ws, other = folders
    async with await ScratchWorkspace.create(ws) as scratch:
        views = await FolderViews.create([other])
        try:
            (scratch.path / "a.txt").write_text("agent's a\n")
            (views.roots[other] / "ro" / "c.txt").write_text("agent's c\n")
            ro = str(other / "ro")
            mount("--bind", ro, ro)
            mount("-o", "remount,ro,bind", ro)
            with pytest.raises(ReviewError) as caught:
                await apply_together(scratch, views)
        finally:
            await views.aclose()
    error = caught.value
    assert str(error).startswith("partly applied: ")
    assert error.context["written"] == ["a.txt"]
    assert (ws / "a.txt").read_text() == "agent's a\n"
    assert (other / "ro" / "c.txt").read_text() == "c\n"  # that folder: nothing written
