"""The fence of an added folder (``--add-dir DIR[:rw]``): the sandbox's file operations reach it
only by an absolute path inside it, under the same rules as the workspace (no ``..``, no
symlink out of it, ``.git`` refused, secret files refused and skipped, no write through a link
or to a hard-linked file; a hard link is the same file, as in the workspace), and a read-only
folder refuses every change."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from driveros.sandbox import LocalSandbox, PathEscapeError, PolicyError, SandboxError


def _layout(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "mine.txt").write_text("workspace\n")
    other = tmp_path / "other"
    (other / "sub").mkdir(parents=True)
    (other / "sub" / "a.txt").write_text("in the folder\n")
    (other / ".git").mkdir()
    (other / ".git" / "config").write_text("[core]\n")
    (other / ".env").write_text("TOKEN=secret-value-123\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "private.txt").write_text("private-contents\n")
    (other / "out").symlink_to(outside)
    (other / "abs.txt").symlink_to(outside / "private.txt")
    (other / "rel.txt").symlink_to("../outside/private.txt")
    view = tmp_path / "view"  # a writable folder's files live elsewhere (a review view)
    view.mkdir()
    (view / "b.txt").write_text("view\n")
    return ws, other, outside, view


@pytest.fixture
async def box(tmp_path: Path) -> AsyncIterator[LocalSandbox]:
    ws, other, _, view = _layout(tmp_path)
    sandbox = LocalSandbox(ws)
    sandbox.add_folder(other)
    sandbox.add_folder(tmp_path / "rw", view, writable=True)
    yield sandbox
    await sandbox.aclose()


async def test_add_dir_fence_reads_inside_and_refuses_every_way_out(
    box: LocalSandbox, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    assert await box.read_file(f"{other}/sub/a.txt") == "in the folder\n"
    assert await box.read_file("mine.txt") == "workspace\n"  # relative: the workspace
    escapes = [
        f"{other}/../outside/private.txt",
        f"{other}/sub/../../outside/private.txt",
        f"{other}/out/private.txt",
        f"{other}/abs.txt",
        f"{other}/rel.txt",
        str(tmp_path / "outside" / "private.txt"),  # not an added folder
        f"{other}-x/sub/a.txt",  # a sibling whose name starts the same
    ]
    for path in escapes:
        with pytest.raises(SandboxError) as caught:
            await box.read_file(path)
        assert "private-contents" not in str(caught.value)
        assert isinstance(caught.value, PathEscapeError | PolicyError), (path, caught.value)
    with pytest.raises(PolicyError):
        await box.read_file(f"{other}/.git/config")
    with pytest.raises(PolicyError):
        await box.read_file(f"{other}/.env")
    found = await box.search("secret-value|private-contents|in the folder", path=str(other))
    assert [m.path for m in found] == [f"{other}/sub/a.txt"]
    assert f"{other}/.env" in found.skipped


async def test_add_dir_fence_read_only_folder_refuses_every_change(
    box: LocalSandbox, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    changes = [
        box.write_file(f"{other}/new.txt", "x"),
        box.edit(f"{other}/sub/a.txt", "in", "out"),
        box.remove(f"{other}/sub/a.txt"),
        box.write_bytes(f"{other}/sub/a.txt", b"x"),
    ]
    for change in changes:
        with pytest.raises(PolicyError, match="read-only added folder"):
            await change
    assert (other / "sub" / "a.txt").read_text() == "in the folder\n"
    assert not (other / "new.txt").exists()


async def test_add_dir_fence_writable_folder_writes_its_view_only(
    box: LocalSandbox, tmp_path: Path
) -> None:
    rw, view = tmp_path / "rw", tmp_path / "view"
    assert await box.read_file(f"{rw}/b.txt") == "view\n"
    await box.write_file(f"{rw}/new/c.txt", "made\n")
    assert (view / "new" / "c.txt").read_text() == "made\n"
    assert not rw.exists()  # the folder's own path is only a name here
    (view / "link.txt").symlink_to(tmp_path / "outside" / "private.txt")
    with pytest.raises(PathEscapeError):
        await box.write_file(f"{rw}/link.txt", "over")
    os.link(tmp_path / "outside" / "private.txt", view / "hard.txt")
    with pytest.raises(PolicyError):
        await box.write_file(f"{rw}/hard.txt", "over")
    assert (tmp_path / "outside" / "private.txt").read_text() == "private-contents\n"


async def test_add_dir_fence_in_place_folder_guards_git_and_hooks_like_the_workspace(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    guarded = tmp_path / "guarded"
    (guarded / ".git" / "hooks").mkdir(parents=True)
    (guarded / ".driveros").mkdir()
    plain = tmp_path / "plain"
    plain.mkdir()
    box = LocalSandbox(ws)
    box.add_folder(guarded, writable=True)
    box.add_folder(plain, writable=True)
    try:
        wrote = await box.run(f"echo ok > {guarded}/file.txt && echo ok > {plain}/file.txt")
        assert wrote.ok, wrote.stderr
        hook = await box.run(f"echo evil > {guarded}/.git/hooks/pre-commit")
        assert not hook.ok and "Read-only file system" in hook.stderr
        cfg = await box.run(f"echo x > {guarded}/.driveros/hooks.toml")
        assert not cfg.ok and "Read-only file system" in cfg.stderr
        planted = await box.run(f"mkdir {plain}/.driveros && echo x > {plain}/.driveros/hooks.toml")
        assert planted.ok, planted.stderr
    finally:
        await box.aclose()
    assert (guarded / "file.txt").read_text() == "ok\n"  # in place: the folder itself
    assert not (guarded / ".git" / "hooks" / "pre-commit").exists()
    assert not (guarded / ".driveros" / "hooks.toml").exists()
    # made during the run: renamed aside when the sandbox closed, never used
    assert not (plain / ".driveros" / "hooks.toml").exists()
    assert [p.name.startswith("hooks.toml.refused-") for p in (plain / ".driveros").iterdir()] == [
        True
    ]


async def test_add_dir_fence_in_place_folder_loses_set_id_bits_at_close(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    folder = tmp_path / "folder"
    folder.mkdir()
    box = LocalSandbox(ws)
    box.add_folder(folder, writable=True)
    try:
        made = await box.run(f"cp /bin/true {folder}/t && chmod u+s,g+s {folder}/t")
        assert made.ok, made.stderr
        assert (folder / "t").stat().st_mode & 0o6000  # set while the run lasts
    finally:
        await box.aclose()
    assert not (folder / "t").stat().st_mode & 0o6000
