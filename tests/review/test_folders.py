"""A writable added folder's changes are named by absolute path, diff headers included, and the
diffs still apply as a patch from ``/`` (``git apply -p1`` reads ``a/home/...``)."""

from __future__ import annotations

from driveros.review import ChangeAction, FileChange, unified_diff
from driveros.review._folders import qualified


def _change(
    path: str,
    action: ChangeAction,
    old_path: str | None = None,
    *,
    before: str | None = None,
    after: str | None = None,
    binary: bool = False,
) -> FileChange:
    diff, _, _ = unified_diff(
        path=path, action=action, old_path=old_path, before=before, after=after, binary=binary
    )
    return FileChange(path=path, action=action, old_path=old_path, diff=diff)


def test_folders_qualified_names_every_header_by_absolute_path() -> None:
    at = "/home/me/lib/b"  # a folder name that is also a diff side's letter
    modified = qualified(_change("b/b.txt", "modify", before="1\n", after="2\n"), at)
    assert modified.path == "/home/me/lib/b/b/b.txt"
    assert modified.diff.splitlines()[:3] == [
        "diff --git a/home/me/lib/b/b/b.txt b/home/me/lib/b/b/b.txt",
        "--- a/home/me/lib/b/b/b.txt",
        "+++ b/home/me/lib/b/b/b.txt",
    ]
    assert "-1" in modified.diff and "+2" in modified.diff
    created = qualified(_change("n.txt", "create", after="x\n"), at)
    assert "--- /dev/null" in created.diff and f"+++ b{at}/n.txt" in created.diff
    moved = qualified(_change("new.txt", "rename", old_path="old.txt"), at)
    assert moved.old_path == f"{at}/old.txt"
    assert f"rename from {at}/old.txt" in moved.diff and f"rename to {at}/new.txt" in moved.diff
    assert moved.diff.startswith(f"diff --git a{at}/old.txt b{at}/new.txt")
    binary = qualified(_change("img.png", "modify", binary=True), at)
    assert f"Binary files a{at}/img.png and b{at}/img.png differ" in binary.diff
