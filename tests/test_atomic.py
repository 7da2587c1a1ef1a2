"""driveros._atomic.write_atomic: the one atomic file replacement (review, state, trust, acp)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from driveros._atomic import write_atomic


def test_replaces_the_file_with_the_bits_asked(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    target.write_text("old")
    target.chmod(0o644)
    write_atomic(target, b"new", perms=0o600)
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


def test_a_link_at_the_target_is_replaced_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    link = tmp_path / "link"
    link.symlink_to(victim)
    write_atomic(link, b"data")
    assert not link.is_symlink() and link.read_bytes() == b"data"
    assert victim.read_text() == "keep me"


def test_a_failed_replace_leaves_the_target_and_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "a-directory"
    (target / "inside").mkdir(parents=True)
    with pytest.raises(OSError):
        write_atomic(target, b"data", prefix="session-", suffix="")
    assert (target / "inside").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-directory"]
