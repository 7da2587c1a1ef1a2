"""changes(): what the agent did, compared with the baseline taken at creation."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from driveros.review import FileChange, ScratchWorkspace, render_changes
from tests.review._repo import git, write_files


async def test_changes_create_modify_delete_rename_binary(repo: Path, scratch_base: Path) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        p = scratch.path
        (p / "src/app.py").write_text("def add(a, b):\n    return a + b\n")
        (p / "src/util.py").rename(p / "src/helpers.py")
        (p / "README.md").unlink()
        (p / "docs").mkdir()
        (p / "docs/guide.md").write_text("# guide\n")
        (p / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
        (p / "trace.log").write_text("ignored by .gitignore\n")
        changes = await scratch.changes()
    assert [c.model_dump(exclude={"diff", "before_sha", "after_sha"}) for c in changes] == [
        {
            "path": "README.md",
            "action": "delete",
            "old_path": None,
            "before": "# demo\n",
            "after": None,
            "binary": False,
            "mode": None,
            "additions": 0,
            "deletions": 1,
        },
        {
            "path": "docs/guide.md",
            "action": "create",
            "old_path": None,
            "before": None,
            "after": "# guide\n",
            "binary": False,
            "mode": "100644",
            "additions": 1,
            "deletions": 0,
        },
        {
            "path": "logo.png",
            "action": "create",
            "old_path": None,
            "before": None,
            "after": None,
            "binary": True,
            "mode": "100644",
            "additions": 0,
            "deletions": 0,
        },
        {
            "path": "src/app.py",
            "action": "modify",
            "old_path": None,
            "before": "def add(a, b):\n    return a - b\n",
            "after": "def add(a, b):\n    return a + b\n",
            "binary": False,
            "mode": "100644",
            "additions": 1,
            "deletions": 1,
        },
        {
            "path": "src/helpers.py",
            "action": "rename",
            "old_path": "src/util.py",
            "before": "X = 1\n",
            "after": "X = 1\n",
            "binary": False,
            "mode": "100644",
            "additions": 0,
            "deletions": 0,
        },
    ]
    by_path = {c.path: c for c in changes}
    assert by_path["src/app.py"].diff == (
        "diff --git a/src/app.py b/src/app.py\n"
        "--- a/src/app.py\n"
        "+++ b/src/app.py\n"
        "@@ -1,2 +1,2 @@\n"
        " def add(a, b):\n"
        "-    return a - b\n"
        "+    return a + b\n"
    )
    assert by_path["logo.png"].diff.endswith("Binary files /dev/null and b/logo.png differ\n")
    assert by_path["src/helpers.py"].paths == ("src/util.py", "src/helpers.py")


async def test_changes_diff_applies_with_git_apply(repo: Path, scratch_base: Path) -> None:
    """The combined diff is a real patch: `git apply` turns the baseline into the result."""
    write_files(repo, {"noeol.txt": "last line without newline", "crlf.txt": "a\r\nb\r\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "more")
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        p = scratch.path
        (p / "noeol.txt").write_text("last line without newline\nand one more")
        (p / "crlf.txt").write_bytes(b"a\r\nB\r\n")
        (p / "src/app.py").write_text("def add(a, b):\n    return a + b\n\n\nZ = 3\n")
        (p / "src/util.py").rename(p / "src/moved.py")
        (p / "new/dir/file.txt").parent.mkdir(parents=True)
        (p / "new/dir/file.txt").write_text("hello\n")
        (p / "README.md").unlink()
        changes = await scratch.changes()
        patch = "".join(c.diff for c in changes)
        expected = {c.path: (p / c.path).read_bytes() for c in changes if c.action != "delete"}
    subprocess.run(["git", "-C", str(repo), "apply", "-"], input=patch.encode(), check=True)
    for path, data in expected.items():
        assert (repo / path).read_bytes() == data
    assert not (repo / "README.md").exists()
    assert not (repo / "src/util.py").exists()


async def test_changes_baseline_includes_dirty_and_untracked(
    repo: Path, scratch_base: Path
) -> None:
    (repo / "src/app.py").write_text("user wip\n")
    (repo / "scratchpad.txt").write_text("user notes\n")
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        (scratch.path / "src/app.py").write_text("user wip\nagent line\n")
        (scratch.path / "scratchpad.txt").unlink()
        changes = await scratch.changes()
    assert [(c.path, c.action, c.before) for c in changes] == [
        ("scratchpad.txt", "delete", "user notes\n"),
        ("src/app.py", "modify", "user wip\n"),
    ]


async def test_changes_plain_copy_ignores_ignored_files(tmp_path: Path, scratch_base: Path) -> None:
    ws = tmp_path / "plain"
    write_files(ws, {".gitignore": "out/\n", "a.txt": "a\n"})
    async with await ScratchWorkspace.create(ws, base_dir=scratch_base) as scratch:
        write_files(
            scratch.path,
            {"out/x.txt": "ignored", "node_modules/m.js": "skipped", "b.txt": "b\n"},
        )
        (scratch.path / "a.txt").write_text("A\n")
        changes = await scratch.changes()
    assert [(c.path, c.action) for c in changes] == [("a.txt", "modify"), ("b.txt", "create")]


async def test_changes_mode_and_symlink(tmp_path: Path, scratch_base: Path) -> None:
    ws = tmp_path / "plain"
    write_files(ws, {"run.sh": "echo hi\n"})
    async with await ScratchWorkspace.create(ws, base_dir=scratch_base) as scratch:
        (scratch.path / "run.sh").chmod(0o755)
        (scratch.path / "link").symlink_to("run.sh")
        changes = await scratch.changes()
    assert [(c.path, c.action, c.mode, c.after) for c in changes] == [
        ("link", "create", "120000", "run.sh"),
        ("run.sh", "modify", "100755", "echo hi\n"),
    ]
    assert "old mode 100644\nnew mode 100755\n" in changes[1].diff


async def test_changes_render_summary_plain_and_color(repo: Path, scratch_base: Path) -> None:
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base) as scratch:
        (scratch.path / "src/app.py").write_text("def add(a, b):\n    return a + b\n")
        (scratch.path / "src/util.py").rename(scratch.path / "src/u2.py")
        changes = await scratch.changes()
    plain = render_changes(changes, color=False)
    assert plain.splitlines()[:3] == [
        " M src/app.py (+1 -1)",
        " R src/util.py -> src/u2.py (+0 -0)",
        "2 files changed, +1 -1",
    ]
    assert "\x1b[" not in plain
    assert "-    return a - b" in plain
    colored = render_changes(changes, color=True)
    assert "\x1b[32m+    return a + b\x1b[0m" in colored
    assert "\x1b[31m-    return a - b\x1b[0m" in colored
    assert render_changes([], color=True) == "No changes.\n"
    assert render_changes(changes, diff=False).count("\n") == 3


def test_changes_file_change_is_frozen() -> None:
    ch = FileChange(path="a", action="create", after="x")
    assert ch.paths == ("a",)
    with pytest.raises(ValidationError, match="frozen"):
        ch.path = "b"  # type: ignore[misc]
