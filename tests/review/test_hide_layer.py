"""The whiteouts that hide a view's ignored paths live in a hide layer: a lower layer above the
user's workspace, on a tmpfs when one is usable (a whiteout there costs microseconds, on ext4
about half a millisecond each), registered in the copy's lease. The upper layer holds only what
the run wrote. The ignored paths come from ``git ls-files`` (no index refresh), and must be
exactly the ``!!`` entries ``git status --ignored=matching`` named before."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driveros.review import ScratchWorkspace, scratch_strategies
from driveros.review._hiding import matching_ignored, user_ignored
from driveros.review._overlay import fs_type, hide_layer_base
from driveros.state import list_leases, mounts_under
from tests.review._repo import git, make_repo, write_files

kernel = pytest.mark.skipif(
    scratch_strategies()["overlay"] is not None,
    reason=f"no kernel overlay here: {scratch_strategies()['overlay']}",
)


def _repo(root: Path) -> Path:
    repo = make_repo(
        root,
        {
            ".gitignore": ".env\nbuild/\n__pycache__/\n*.log\n",
            "pkg/mod.py": "M = 1\n",
            "app.py": "A = 1\n",
        },
    )
    write_files(
        repo,
        {
            ".env": "API_TOKEN=sk-live-0123\n",
            "build/out.js": "x\n",
            "pkg/__pycache__/mod.pyc": b"\x00",
            "pkg/run.log": "log\n",
        },
    )
    return repo


async def _hide_layer_of(root_name: str) -> Path | None:
    """The hide layer registered by the scratch lease whose root is named ``root_name``."""
    for lease in await list_leases():
        paths = lease.record.paths
        if Path(paths[0]).name == root_name:
            return Path(paths[1]) if len(paths) > 1 else None
    raise AssertionError(f"no lease for {root_name}")


def _devices(top: Path) -> list[str]:
    out = []
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            p = Path(d, n)
            if stat.S_ISCHR(p.lstat().st_mode) or n.startswith(".wh."):
                out.append(str(p.relative_to(top)))
    return out


@kernel
async def test_the_whiteouts_are_in_a_hide_layer_on_a_tmpfs_not_in_the_upper_layer(
    tmp_path: Path, scratch_base: Path
) -> None:
    repo = _repo(tmp_path / "proj")
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="overlay") as s:
        root = s.path.parent
        for rel in (".env", "build", "pkg/__pycache__", "pkg/run.log"):
            assert not os.path.lexists(s.path / rel), rel
        assert sorted(os.listdir(s.path / "pkg")) == ["mod.py"]
        assert _devices(root / "upper") == []  # the upper layer holds only the run's writes
        layer = await _hide_layer_of(root.name)
        base = hide_layer_base()
        if base is None:
            assert layer is None and (root / "hide").is_dir()
        else:
            assert layer is not None and layer.parent == base
            assert layer.name.startswith("driveros-hide-") and fs_type(layer) == "tmpfs"
            assert stat.S_IMODE(layer.stat().st_mode) == 0o700
            assert sorted(_devices(layer)) == [".env", "build", "pkg/__pycache__", "pkg/run.log"]
            # A directory holding a whiteout shows the user's directory's mode and times.
            assert (layer / "pkg").stat().st_mtime_ns == (repo / "pkg").stat().st_mtime_ns
        (s.path / "app.py").unlink()
        write_files(s.path, {".env": "MINE=1\n", "pkg/__pycache__/x.pyc": "x"})
        assert [(c.path, c.action) for c in await s.changes()] == [("app.py", "delete")]
    assert mounts_under(scratch_base) == []
    if layer is not None:
        assert not os.path.lexists(layer)
    assert await list_leases() == []


@kernel
async def test_a_hide_layer_that_cannot_be_made_on_the_tmpfs_goes_to_the_scratch_root(
    tmp_path: Path, scratch_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path / "proj")
    missing = tmp_path / "no-such-tmpfs"
    monkeypatch.setattr("driveros.review._hiding.hide_layer_base", lambda: missing)
    async with await ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="overlay") as s:
        assert s.strategy == "overlay", s.fallback_reason
        assert not os.path.lexists(s.path / ".env") and not os.path.lexists(s.path / "build")
        assert sorted(_devices(s.path.parent / "hide")) == [
            ".env",
            "build",
            "pkg/__pycache__",
            "pkg/run.log",
        ]
        assert _devices(s.path.parent / "upper") == []
        assert await s.changes() == []
    assert list(scratch_base.iterdir()) == []


@kernel
async def test_a_kept_view_makes_its_hide_layer_again_when_it_is_gone(
    tmp_path: Path, scratch_base: Path
) -> None:
    repo = _repo(tmp_path / "proj")
    s = await ScratchWorkspace.create(repo, base_dir=scratch_base, strategy="overlay")
    root = s.path.parent
    first = await _hide_layer_of(root.name)
    (s.path / "app.py").write_text("A = 2\n")
    # A directory the hide layer holds too, copied up from it.
    (s.path / "pkg/mod.py").write_text("M = 2\n")
    await s.keep({"run_id": "r"})
    await s.aclose()
    # Let go of: unmounted, and the hide layer (on a tmpfs, gone after a reboot) removed.
    assert mounts_under(s.path) == []
    if first is not None:
        assert not os.path.lexists(first)
    [kept] = await ScratchWorkspace.reopen_kept(workspace=repo)
    try:
        view = kept.scratch.path
        for rel in (".env", "build", "pkg/__pycache__", "pkg/run.log"):
            assert not os.path.lexists(view / rel), rel
        assert [(c.path, c.after) for c in await kept.scratch.changes()] == [
            ("app.py", "A = 2\n"),
            ("pkg/mod.py", "M = 2\n"),
        ]
        assert sorted(os.listdir(view / "pkg")) == ["mod.py"]
        again = await _hide_layer_of(root.name)
        if first is not None:
            assert again is not None and again != first and again.is_dir()
        # Reopened again by another process (the hide layer already gone): still hidden.
        await kept.scratch.keep({"run_id": "r"})
        await kept.scratch.aclose()
        [kept] = await ScratchWorkspace.reopen_kept(workspace=repo)
        assert not os.path.lexists(kept.scratch.path / ".env")
        last = await _hide_layer_of(root.name)
    finally:
        await kept.scratch.discard()
    if last is not None:
        assert not os.path.lexists(last)
    assert list(scratch_base.iterdir()) == []


# -- the ignored listing ------------------------------------------------------------------------


def _status_ignored(top: Path) -> list[str]:
    out = subprocess.run(
        [
            "git",
            "-C",
            str(top),
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--ignored=matching",
            "--no-renames",
            "--ignore-submodules=all",
        ],
        check=True,
        capture_output=True,
    ).stdout
    entries = [e.decode("utf-8", "surrogateescape") for e in out.split(b"\0")]
    return sorted(e[3:] for e in entries if e.startswith("!!"))


async def test_the_ignored_listing_names_what_status_named(tmp_path: Path) -> None:
    """Directories an ignore pattern matches (whole), untracked directories holding only
    ignored files (their files), ignored files next to tracked ones in an ignored directory,
    nested repositories, names with spaces and newlines, and a tracked ignored file (never)."""
    repo = make_repo(
        tmp_path / "proj",
        {
            ".gitignore": "*.log\nbuild/\nout/\n.env*\nonlyign/*.tmp\nsrc/cache/\n/trkdir/\n"
            "__pycache__/\nempty/\n",
            "pkg/m.py": "m\n",
            "trkdir/a": "a\n",
        },
    )
    git(repo, "add", "-f", "trkdir/a")
    write_files(repo, {"trk/t.log": "tracked, ignored\n"})
    git(repo, "add", "-f", "trk/t.log")
    git(repo, "commit", "-q", "-m", "more")
    write_files(
        repo,
        {
            "build/a.js": "",
            "build/sub/b": "",
            "src/debug.log": "",
            "src/cache/x": "",
            "onlylog/x.log": "",
            "out/deep/nested/key.pem": "",
            ".env": "",
            ".env.local": "",
            "pkg/__pycache__/m.pyc": "",
            "onlyign/a.tmp": "",
            "build2/x.log": "",
            "x/y/z.log": "",
            "u/keep.txt": "",
            "u/v/w.log": "",
            "sp ace/a b.log": "",
            "nl\nx.log": "",
            "trkdir/b.txt": "",
            "nest/f": "",
            "nest/n.log": "",
            "ign-nest/x.log": "",
        },
    )
    (repo / "empty").mkdir()
    (repo / "untracked-empty").mkdir()
    git(repo / "nest", "init", "-q")
    git(repo / "ign-nest", "init", "-q")
    (repo / "build/inner").mkdir()
    git(repo / "build/inner", "init", "-q")
    expected = _status_ignored(repo)
    assert "build/" in expected and "x/y/z.log" in expected and "trkdir/b.txt" in expected
    assert sorted(await user_ignored(repo)) == expected


def test_matching_ignored_drops_directories_listed_with_their_contents() -> None:
    listed = ["a/", "a/b/", "a/b/c.log", "d/", "e/", "e/f.log", "g.log"]
    assert matching_ignored(listed) == ["a/b/c.log", "d/", "e/f.log", "g.log"]


_NAMES = st.sampled_from(["a", "b", "c.log", "d.tmp", "build", "x y"])
_PATHS = st.lists(st.lists(_NAMES, min_size=1, max_size=4), min_size=1, max_size=12)
_RULES = st.lists(
    st.sampled_from(["*.log", "build/", "/a/", "b", "*.tmp", "a/b/", "!keep.log", "c.log/"]),
    max_size=4,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(paths=_PATHS, rules=_RULES, tracked=st.integers(0, 3))
def test_the_ignored_listing_matches_status_on_any_tree(
    tmp_path_factory: pytest.TempPathFactory, paths: list[list[str]], rules: list[str], tracked: int
) -> None:
    repo = make_repo(tmp_path_factory.mktemp("h") / "r", {".gitignore": "\n".join(rules) + "\n"})
    made: list[str] = []
    for parts in paths:
        p = repo.joinpath(*parts)
        inside = [q for q in [p, *p.parents] if repo in q.parents]
        if p.is_dir() or any(q.is_file() for q in inside):
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x")
        made.append("/".join(parts))
    for rel in made[:tracked]:
        git(repo, "add", "-f", rel)
    expected = _status_ignored(repo)
    assert sorted(asyncio.run(user_ignored(repo))) == expected
