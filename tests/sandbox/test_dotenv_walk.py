"""Finding the workspace's ``.env`` files for the redactor: ``find`` (a walk in C, off the
interpreter lock) lists exactly what the Python walk it replaced reads, and the walk is still
there for a machine without ``find``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driveros.sandbox import _env, dotenv_assignments

_NAMES = st.sampled_from(
    [".env", ".ENV.local", "prod.env", "x.Env", "env", "notes.txt", ".envrc", "a.env.bak"]
)
_DIRS = st.sampled_from(["", "a", "a/b", "node_modules", "node_modules/x", ".git", "c/.git/d"])
_FILES = st.lists(st.tuples(_DIRS, _NAMES, st.integers(0, 999)), max_size=12)


def _make(root: Path, files: list[tuple[str, str, int]]) -> None:
    for where, name, n in files:
        d = root / where
        d.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(f"SECRET_{n}=value-{where.replace('/', '-')}-{name}-{n}\n")


def _walked(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    with monkeypatch.context() as m:
        m.setattr(_env, "_FIND", ())  # no find here: the Python walk
        return dotenv_assignments(root, recursive=True)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(files=_FILES)
def test_find_reads_what_the_walk_reads(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, files: Any
) -> None:
    root = tmp_path_factory.mktemp("ws")
    _make(root, files)
    found = dotenv_assignments(root, recursive=True)
    assert sorted(found) == sorted(_walked(root, monkeypatch))
    assert not any("node_modules" in v or ".git" in v for _, v in found)


def test_no_link_is_followed_and_no_fifo_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / ".env").write_text("TOKEN=outside-value\n")
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "linked").symlink_to(outside)
    (root / "sub" / "link.env").symlink_to(outside / ".env")
    os.mkfifo(root / "sub" / "pipe.env")
    (root / "sub" / ".env").write_text("TOKEN=inside-value\n")
    assert dotenv_assignments(root, recursive=True) == [("TOKEN", "inside-value")]


def test_a_root_given_through_a_link_is_searched(tmp_path: Path) -> None:
    (tmp_path / "real" / "deep").mkdir(parents=True)
    (tmp_path / "real" / "deep" / "x.env").write_text("K=v-deep\n")
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    assert dotenv_assignments(tmp_path / "alias", recursive=True) == [("K", "v-deep")]
