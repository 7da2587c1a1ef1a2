"""The review planner's path rule, shared by the CLI apply and the language server's edit."""

from __future__ import annotations

import os
from pathlib import Path

from driveros.review import path_problem, plan_file, read_text
from driveros.review._files import blob_sha
from driveros.review._plan import read_bytes


def _tree(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "real").mkdir(parents=True)
    (ws / "file.txt").write_text("x\n")
    (tmp_path / "outside").mkdir()
    (ws / "out").symlink_to("../outside")
    (ws / "in").symlink_to("real")  # even a link that stays inside is never written through
    return ws


def test_plan_path_problem_never_through_a_symlink_or_over_a_directory(tmp_path: Path) -> None:
    ws = _tree(tmp_path)
    assert path_problem(ws, "real/new.txt") is None
    assert path_problem(ws, "deep/new/dir/a.txt") is None
    assert "symbolic link" in (path_problem(ws, "out/evil.txt") or "")
    assert "symbolic link" in (path_problem(ws, "in/a.txt") or "")
    assert "symbolic link" in (path_problem(ws, "in/a/b.txt") or "")
    assert path_problem(ws, "real") == "a directory is in the way"
    assert path_problem(ws, "real", remove=True) == "now a directory in the workspace"
    assert "is a file" in (path_problem(ws, "file.txt/x") or "")
    assert "workspace-relative" in (path_problem(ws, "../x") or "")
    assert ".git" in (path_problem(ws, ".git/hooks/pre-commit") or "")


def test_plan_file_a_symlink_or_directory_is_a_conflict_not_a_crash(tmp_path: Path) -> None:
    ws = _tree(tmp_path)

    class Delete:
        path, action, old_path, binary, mode = "out", "delete", None, False, None
        before, after = "../outside", None

    class Create:
        path, action, old_path, binary, mode = "real", "create", None, False, "100644"
        before, after = None, "text\n"

    def current(rel: str) -> str | None:
        return read_text(ws / rel)

    assert "symbolic link" in (plan_file(ws, Delete(), current=current).conflict or "")
    assert plan_file(ws, Create(), current=current).conflict == "a directory is in the way"


def test_plan_file_a_fifo_where_a_file_was_is_a_conflict_never_a_hang(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / "pipe.txt")  # opened for reading without O_NONBLOCK, this would block

    class Modify:
        path, action, old_path, binary, mode = "pipe.txt", "modify", None, False, "100644"
        before, after, before_sha, after_sha = "a\n", "b\n", None, None

    for text_only, read in ((True, read_text), (False, read_bytes)):
        decided = plan_file(
            ws, Modify(), current=lambda rel, read=read: read(ws / rel), text_only=text_only
        )
        assert (decided.conflict or "").startswith("cannot read the file")


def test_plan_file_compares_bytes_by_blob_id_and_text_by_text(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("agent\n")

    class Modify:
        path, action, old_path, binary, mode = "a.txt", "modify", None, False, "100644"
        before, after = "base\n", "agent\n"
        before_sha, after_sha = blob_sha(b"base\n"), blob_sha(b"agent\n")

    as_text = plan_file(ws, Modify(), current=lambda rel: read_text(ws / rel))
    as_bytes = plan_file(ws, Modify(), current=lambda rel: read_bytes(ws / rel), text_only=False)
    assert as_text.done and as_bytes.done  # the workspace already holds the agent's version
    (ws / "a.txt").write_text("base\n")
    overlaid = plan_file(
        ws,
        Modify(),
        current=lambda rel: read_bytes(ws / rel),
        text_only=False,
        baseline={"a.txt": blob_sha(b"disk\n")},  # the run started from a buffer, not the disk
    )
    assert overlaid.conflict == "changed in the workspace since the run started"
