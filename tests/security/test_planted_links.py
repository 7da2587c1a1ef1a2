"""Nothing driveros writes in a workspace follows a link the workspace planted (issue 35 row 2).

A symlink planted at any component of a path driveros writes (``.driveros``, an intermediate
directory, the file itself), pointing at a file or directory outside, makes the write fail
with PlantedLinkError and leaves everything outside byte for byte as it was. The front ends
(commit-msg, council, issue-bot, corpus add) are driven in tests/security/test_planted_fronts.py.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driveros._atomic import write_atomic
from driveros._safe_open import PlantedLinkError, anchor, append, open_file, read_bytes
from driveros.evals import Corpus, CorpusRecord

_NAMES = st.sampled_from([".driveros", "corpus.jsonl", "issue-bot", "hooks", "a", "b.json"])


def snapshot(top: Path) -> dict[str, bytes | str]:
    """Every name below ``top`` with its content (a link: its target), for an exact compare."""
    seen: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            rel = str(path.relative_to(top))
            if path.is_symlink():
                seen[rel] = "-> " + os.readlink(path)
            elif path.is_file():
                seen[rel] = path.read_bytes()
            else:
                seen[rel] = "dir"
    return seen


def plant(root: Path, outside: Path, parts: list[str], at: int, *, to: str) -> None:
    """Real directories for ``parts[:at]``, then a link at ``parts[at]`` to ``outside``: to a
    directory, a file, or a name that does not exist yet (``O_CREAT`` would make it)."""
    here = root
    for part in parts[:at]:
        here = here / part
        here.mkdir(exist_ok=True)
    target = {"dir": "victim-dir", "file": "victim", "dangling": "not-yet"}[to]
    (here / parts[at]).symlink_to(outside / target)


def _outside(top: Path) -> Path:
    outside = top / "outside"
    (outside / "victim-dir").mkdir(parents=True)
    (outside / "victim").write_text("export PATH=/usr/bin  # the user's file\n")
    for part in ("corpus.jsonl", "b.json", "a", "hooks", ".driveros", "issue-bot"):
        (outside / "victim-dir" / part).write_text("keep\n")
    return outside


def _writes(root: Path, rel: str) -> list[tuple[str, object]]:
    return [
        ("append", lambda: append(root, rel, b'{"op": "add"} $(touch /tmp/pwned)\n')),
        ("atomic", lambda: write_atomic(root / rel, b"data", root=root)),
        ("read", lambda: read_bytes(root, rel)),
        ("open", lambda: os.close(open_file(root, rel, os.O_WRONLY | os.O_CREAT))),
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(_NAMES, min_size=1, max_size=4, unique=True),
    data=st.data(),
    to=st.sampled_from(["dir", "file", "dangling"]),
)
def test_planted_link_at_any_component_is_refused(
    parts: list[str], data: st.DataObject, to: str
) -> None:
    at = data.draw(st.integers(min_value=0, max_value=len(parts) - 1), label="link at")
    with tempfile.TemporaryDirectory() as top_name:
        top = Path(top_name)
        outside, root = _outside(top), top / "repo"
        root.mkdir()
        plant(root, outside, parts, at, to=to)
        before = snapshot(outside)
        for how, write in _writes(root, "/".join(parts)):
            with pytest.raises(PlantedLinkError, match="symbolic link"):
                write()  # type: ignore[operator]
            assert snapshot(outside) == before, how


def test_a_fifo_at_the_file_is_refused_without_blocking(tmp_path: Path) -> None:
    (tmp_path / ".driveros").mkdir()
    os.mkfifo(tmp_path / ".driveros" / "corpus.jsonl")
    for flags in (os.O_RDONLY, os.O_WRONLY | os.O_APPEND | os.O_CREAT):
        with pytest.raises(PlantedLinkError, match="not a regular file"):
            open_file(tmp_path, ".driveros/corpus.jsonl", flags)


def test_a_clean_path_is_written_and_its_directories_made(tmp_path: Path) -> None:
    append(tmp_path, ".driveros/x/corpus.jsonl", b"one\n")
    append(tmp_path, ".driveros/x/corpus.jsonl", b"two\n")
    write_atomic(tmp_path / ".driveros/y/state.json", b"{}", root=tmp_path)
    assert read_bytes(tmp_path, ".driveros/x/corpus.jsonl") == b"one\ntwo\n"
    assert (tmp_path / ".driveros/y/state.json").read_bytes() == b"{}"
    assert read_bytes(tmp_path, ".driveros/missing") is None
    assert sorted(p.name for p in (tmp_path / ".driveros/y").iterdir()) == ["state.json"]


def test_the_root_itself_may_be_reached_through_a_link(tmp_path: Path) -> None:
    """The workspace is the user's choice (a symlinked home or checkout is fine)."""
    (tmp_path / "real").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "real")
    append(tmp_path / "via", ".driveros/corpus.jsonl", b"x\n")
    assert (tmp_path / "real/.driveros/corpus.jsonl").read_bytes() == b"x\n"


def test_anchor_walks_from_the_innermost_root_and_never_above_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    assert anchor(repo / ".driveros/../.driveros/c.jsonl", repo) == (
        repo,
        PurePosixPath(".driveros/c.jsonl"),
    )
    elsewhere = tmp_path / "user" / "c.jsonl"
    assert anchor(elsewhere, repo) == (tmp_path / "user", PurePosixPath("c.jsonl"))
    with pytest.raises(PlantedLinkError):
        append(repo, "../escape", b"x")


@pytest.mark.parametrize("planted", [".driveros", ".driveros/corpus.jsonl"])
def test_corpus_refuses_a_planted_link_and_leaves_the_target(tmp_path: Path, planted: str) -> None:
    outside = _outside(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    if planted == ".driveros":
        (repo / ".driveros").symlink_to(outside / "victim-dir")
    else:
        (repo / ".driveros").mkdir()
        (repo / ".driveros/corpus.jsonl").symlink_to(outside / "victim")
    before = snapshot(outside)
    corpus = Corpus(repo / ".driveros/corpus.jsonl", root=repo)
    record = CorpusRecord(kind="commit-msg", input="$(touch pwned)", output="feat: x")
    with pytest.raises(PlantedLinkError, match="symbolic link"):
        asyncio.run(corpus.add(record))
    with pytest.raises(PlantedLinkError):
        asyncio.run(corpus.records())
    assert snapshot(outside) == before


def test_a_recorded_cassette_is_not_written_through_a_planted_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from driveros.evals._cassette import Cassette

    outside = _outside(tmp_path)
    repo = tmp_path / "repo"
    (repo / "suite").mkdir(parents=True)
    (repo / "suite" / "cassettes").symlink_to(outside / "victim-dir")
    monkeypatch.chdir(repo)
    before = snapshot(outside)
    cassette = Cassette(provider="openai", model="m")
    with pytest.raises(PlantedLinkError, match="symbolic link"):
        cassette.save(Path("suite/cassettes/case.json"))
    assert snapshot(outside) == before
    (repo / "suite" / "cassettes").unlink()
    cassette.save(Path("suite/cassettes/case.json"))
    assert Cassette.load(repo / "suite/cassettes/case.json") == cassette
