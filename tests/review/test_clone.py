"""Files copied into a worktree scratch copy: a reflink where the file system has them, else a
plain copy; content and mode either way, symlinks kept as links."""

from __future__ import annotations

import os
from pathlib import Path

from driveros.review._files import clone_or_copy, open_parent


def test_clone_or_copy_copies_content_mode_and_links(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "run.sh").write_bytes(b"#!/bin/sh\n" + os.urandom(3 * 1024 * 1024))
    (src / "run.sh").chmod(0o751)
    (src / "link").symlink_to("run.sh")
    dst = tmp_path / "dst"
    dst.mkdir()
    for name in ("run.sh", "link"):
        with open_parent(src, name) as (dir_fd, last):
            clone_or_copy(dir_fd, last, dst / name)
    assert (dst / "run.sh").read_bytes() == (src / "run.sh").read_bytes()
    assert (dst / "run.sh").stat().st_mode & 0o777 == 0o751
    assert os.readlink(dst / "link") == "run.sh"
    # A clone is copy-on-write: writing the copy never changes the original.
    with open(dst / "run.sh", "r+b") as fh:
        fh.write(b"#!/bin/ba")
    assert (src / "run.sh").read_bytes().startswith(b"#!/bin/sh\n")
