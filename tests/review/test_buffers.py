"""An editor buffer adopted while the agent works (ScratchWorkspace.adopt_buffer): the copy
and the baseline get it, as for an overlay given at creation; runs once per strategy."""

from __future__ import annotations

from pathlib import Path

import pytest

from driveros.review import ConflictError, ScratchWorkspace
from tests.review._repo import write_files

DISK = "def add(a, b):\n    return a - b\n"
BUFFER = "def add(a, b):\n    return a - b  # unsaved\n"
AGENT = "def add(a, b):\n    return a + b  # unsaved\n"


async def test_an_adopted_buffer_is_the_base_of_the_proposal(
    repo: Path, scratch_base: Path
) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        assert await scratch.adopt_buffer("src/app.py", BUFFER) is True
        assert (scratch.path / "src/app.py").read_text() == BUFFER
        assert await scratch.changes() == []  # the buffer is the baseline, not a change
        (scratch.path / "src/app.py").write_text(AGENT)
        [change] = await scratch.changes()
        assert (change.before, change.after) == (BUFFER, AGENT)
        assert (await scratch.apply()).applied == ["src/app.py"]
    assert (repo / "src/app.py").read_text() == AGENT


async def test_a_disk_changed_since_the_start_is_a_conflict(repo: Path, scratch_base: Path) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        assert await scratch.adopt_buffer("src/app.py", BUFFER)
        (scratch.path / "src/app.py").write_text(AGENT)
        (repo / "src/app.py").write_text("# the user saved something else\n")
        with pytest.raises(ConflictError):
            await scratch.apply()
    assert (repo / "src/app.py").read_text() == "# the user saved something else\n"


async def test_the_agents_version_wins_over_a_later_buffer(repo: Path, scratch_base: Path) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        (scratch.path / "src/app.py").write_text(AGENT)
        assert await scratch.adopt_buffer("src/app.py", BUFFER) is False
        assert (scratch.path / "src/app.py").read_text() == AGENT
        [change] = await scratch.changes()
        assert change.before == DISK


async def test_a_buffer_is_adopted_once_its_file_changed_back(
    repo: Path, scratch_base: Path
) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        assert await scratch.adopt_buffer("src/app.py", BUFFER)
        # a second buffer for the same file: the copy still holds the (new) baseline
        assert await scratch.adopt_buffer("src/app.py", BUFFER + "# more\n")
        assert await scratch.changes() == []
        (scratch.path / "src/app.py").write_text(AGENT)
        [change] = await scratch.changes()
        assert change.before == BUFFER + "# more\n"
        await scratch.apply()  # the disk still holds what it held at the start
    assert (repo / "src/app.py").read_text() == AGENT


@pytest.mark.parametrize(
    "path", ["src/missing.py", ".git/config", "link.py", "linkdir/app.py", "src", "build/x.log"]
)
async def test_what_cannot_be_a_buffer_is_left_alone(
    repo: Path, scratch_base: Path, path: str
) -> None:
    (repo / "link.py").symlink_to("src/app.py")
    (repo / "linkdir").symlink_to("src")
    write_files(repo, {"build/x.log": "ignored\n"})
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        before = {p: p.read_bytes() for p in scratch.path.rglob("*") if p.is_file()}
        assert await scratch.adopt_buffer(path, "planted = True\n") is False
        after = {p: p.read_bytes() for p in scratch.path.rglob("*") if p.is_file()}
        assert after == before
        assert [c.path for c in await scratch.changes()] == []
    assert (repo / "src/app.py").read_text() == DISK


async def test_the_same_text_changes_nothing(repo: Path, scratch_base: Path) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        assert await scratch.adopt_buffer("src/app.py", DISK) is False
        assert await scratch.changes() == []


async def test_a_plain_directory_adopts_buffers_too(tmp_path: Path, scratch_base: Path) -> None:
    ws = tmp_path / "plain"
    write_files(ws, {"app.py": DISK})
    async with await ScratchWorkspace.create(ws, base_dir=scratch_base) as scratch:
        assert await scratch.adopt_buffer("app.py", BUFFER)
        (scratch.path / "app.py").write_text(AGENT)
        [change] = await scratch.changes()
        assert change.before == BUFFER
        await scratch.apply()
    assert (ws / "app.py").read_text() == AGENT
