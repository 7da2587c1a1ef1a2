"""Row 2 of issue 28: ``--review --review-action keep`` meeting a full disk. The workspace lives
on a small tmpfs with room for only some of the five files the agent wrote: either all five
are written or none, and the message says which (never "nothing was written" when something
was)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from driveros.review import ReviewError, ScratchWorkspace
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests.cli.conftest import run_cli

FILES = 5
#: Bytes of each file the agent writes: 10 pages of tmpfs each.
SIZE = 10 * 4096
MOUNT_PAGES = 256  # a 1 MiB tmpfs


def _content(i: int) -> str:
    line = f"file {i}: " + "x" * 70 + "\n"
    return (line * (SIZE // len(line) + 1))[:SIZE]


WRITES = [
    Turn(
        tool_calls=[
            ToolCallSpec("write_file", {"path": f"pkg/m{i}.txt", "content": _content(i)})
            for i in range(FILES)
        ]
    ),
    Turn(text="wrote five files"),
]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs mounted at ``tmp_path/disk`` (root only)."""
    point = tmp_path / "disk"
    point.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={MOUNT_PAGES * 4}k", "tmpfs", str(point)],
        capture_output=True,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


def _fill(disk: Path, free_pages: int) -> None:
    """Leave about ``free_pages`` pages free on ``disk``."""
    st = os.statvfs(disk)
    used = (st.f_bfree - free_pages) * st.f_frsize
    if used > 0:
        (disk / "filler.bin").write_bytes(b"\0" * used)


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


#: Room for: half a file, two and a half files, four and a half files, all of them.
@pytest.mark.parametrize("free_pages", [5, 25, 45, 200])
async def test_keep_on_a_full_disk_writes_all_files_or_none(
    small_disk: Path, free_pages: int
) -> None:
    ws = small_disk / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "m1.txt").write_text("the user's own m1\n")  # one file is replaced
    (ws / "README.md").write_text("hello\n")
    _fill(small_disk, free_pages)
    before = _tree(ws)
    async with ScriptedModelServer(WRITES) as model:
        run = await run_cli(
            "--task",
            "write five files",
            "--review",
            "--review-action",
            "keep",
            "--format",
            "json",
            "--provider",
            "openai",
            "--no-memory",
            server=model,
            cwd=ws,
            extra_env={"DRIVEROS_DIAGNOSTICS": "off"},
        )
    result = run.json()
    after = _tree(ws)
    assert "Traceback" not in run.stderr
    assert not [n for n in os.listdir(ws / "pkg") if n.startswith(".")], "a temp file is left"
    wanted = {f"pkg/m{i}.txt": _content(i).encode() for i in range(FILES)}
    if result["outcome"] != "setup_error":  # applied: every file, and the run says so
        assert (run.code, result["outcome"]) == (2, "unverified"), run.stderr
        assert after == {**before, **wanted}
        assert "applied 5 files" in run.stderr
        assert free_pages >= FILES * 10
        return
    # Refused (the free-space check) or rolled back: the tree is exactly as it was.
    assert (run.code, result["outcome"]) == (1, "setup_error"), run.stderr
    assert after == before, sorted(set(after.items()) ^ set(before.items()))
    assert "nothing was written" in result["error"]
    assert "keep failed" in result["error"]
    if free_pages < FILES * 10:
        assert "space" in result["error"] or "No space" in result["error"], result["error"]


# -- the same guarantee below the CLI, with a failure after some files were staged or placed --

USER_FILES = {"a.txt": "a\n", "b.txt": "b\n", "d.txt": "d\n", "ro/c.txt": "c\n", "z.txt": "z\n"}


def mount(*args: str) -> None:
    """``mount ARGS`` (as root); skip the test where this machine does not allow it."""
    done = subprocess.run(["mount", *args], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here: {done.stderr.decode().strip()}")


def _agent_edits(view: Path) -> None:
    """A deletion, a rename, a modification, a new file in a new directory, and two more
    modifications (``ro/c.txt`` and ``z.txt``, the ones the tests make fail)."""
    (view / "a.txt").unlink()
    (view / "b.txt").rename(view / "bb.txt")
    for rel in ("d.txt", "ro/c.txt", "z.txt"):
        (view / rel).write_text(f"agent's {rel}\n")
    (view / "new").mkdir()
    (view / "new" / "n.txt").write_text("new\n")


@pytest.fixture
def user_tree(tmp_path: Path) -> Iterator[Path]:
    ws = tmp_path / "ws"
    for rel, text in USER_FILES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    yield ws
    for point in (ws / "ro", ws / "z.txt"):
        subprocess.run(["umount", "-l", str(point)], check=False, capture_output=True)


def _hidden_left(root: Path) -> list[str]:
    return [str(p) for p in root.rglob(".*driveros-*")]


async def _apply_with(ws: Path, tmp_path: Path, fault: list[list[str]]) -> ReviewError:
    base = tmp_path / "scratch"
    base.mkdir()
    async with await ScratchWorkspace.create(ws, base_dir=base) as scratch:
        _agent_edits(scratch.path)
        assert len(await scratch.changes()) == 6
        for args in fault:
            mount(*args)
        with pytest.raises(ReviewError) as info:
            await scratch.apply()
        return info.value


async def test_apply_failing_to_stage_a_file_writes_nothing(
    user_tree: Path, tmp_path: Path
) -> None:
    ro = str(user_tree / "ro")
    error = await _apply_with(
        user_tree, tmp_path, [["--bind", ro, ro], ["-o", "remount,ro,bind", ro]]
    )
    assert _tree(user_tree) == {k: v.encode() for k, v in USER_FILES.items()}
    assert str(error) == (
        "not applied: could not write ro/c.txt (Read-only file system); nothing was written"
    )
    assert error.context["written"] == []
    assert not (user_tree / "new").exists()
    assert _hidden_left(user_tree) == []


async def test_apply_failing_to_place_the_last_file_restores_every_other(
    user_tree: Path, tmp_path: Path
) -> None:
    z = str(user_tree / "z.txt")  # a mount point: renaming onto it fails (EBUSY)
    error = await _apply_with(user_tree, tmp_path, [["--bind", z, z]])
    assert _tree(user_tree) == {k: v.encode() for k, v in USER_FILES.items()}
    assert str(error).startswith("not applied: could not write z.txt (")
    assert str(error).endswith("; every file was restored; nothing was written")
    assert error.context["written"] == []
    assert not (user_tree / "new").exists()
    assert _hidden_left(user_tree) == []


async def test_acp_disk_write_of_a_rename_is_all_or_nothing(
    user_tree: Path, tmp_path: Path
) -> None:
    from acp import schema

    from driveros.acp._edits import EditGate, deliver_edits

    updates: list[object] = []

    async def emit(update: object) -> None:
        updates.append(update)

    async def never_asked(*_: object) -> schema.RequestPermissionResponse:
        raise AssertionError("allowed for the session: nothing is asked")

    base = tmp_path / "scratch"
    base.mkdir()
    async with await ScratchWorkspace.create(user_tree, base_dir=base) as scratch:
        (scratch.path / "z.txt").rename(scratch.path / "y.txt")
        changes = await scratch.changes()
        z = str(user_tree / "z.txt")  # the rename's source is busy: it cannot be removed
        mount("--bind", z, z)
        gate = EditGate(emit=emit, ask=never_asked, read=None, write=None, always="allow")
        feedback = await deliver_edits(gate, scratch, changes)
    assert _tree(user_tree) == {k: v.encode() for k, v in USER_FILES.items()}
    (line,) = feedback
    assert line.startswith("- y.txt: could not be written (not applied: could not remove z.txt")
    assert line.endswith("every file was restored; nothing was written)")
    assert _hidden_left(user_tree) == []


def test_a_rollback_that_cannot_restore_names_the_files_left_written(tmp_path: Path) -> None:
    """Putting an original back fails (here: what was kept aside is gone): that file is
    reported as left written, never as restored; the others are restored."""
    from driveros.review._apply import Step, _place, _roll_back, _stage

    root = tmp_path / "ws"
    root.mkdir()
    for name in ("a.txt", "b.txt"):
        (root / name).write_text(f"user's {name}\n")
    steps = [Step(n, root / n, f"agent's {n}\n".encode()) for n in ("a.txt", "b.txt")]
    for step in steps:
        _stage(root, step)
        _place(step)
    assert steps[0].aside is not None
    steps[0].aside.unlink()  # the original of a.txt can no longer be put back
    assert _roll_back(steps) == ["a.txt"]
    assert (root / "a.txt").read_text() == "agent's a.txt\n"  # what the report says
    assert (root / "b.txt").read_text() == "user's b.txt\n"
