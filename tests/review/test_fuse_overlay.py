"""A scratch view without root: fuse-overlayfs (strategy ``fuse-overlay``).

The CI machine runs as root, so each test runs a real unprivileged process: a small script
under ``setpriv`` as uid 65534 (``nobody``), on a repository that user owns, with its own HOME
and state directory. Observations come back as JSON; the assertions are made here. The
process reads driveros and its dependencies from wherever it can (tests/_unprivileged.py:
a readable copy when the checkout is not), so the tests run from any checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from driveros.review._overlay import hide_in_layer, upper_candidates
from driveros.state import mounts_under
from tests._unprivileged import (
    UID,
    drop,
    imports_as_nobody,
    python_for_nobody,
    readable_site,
    sites_for_nobody,
)
from tests.review._repo import make_repo, tree, write_files

SECRET = "API_TOKEN=sk-live-0123456789abcdef"

_PRELUDE = """
import asyncio, json, os, site, sys
for p in json.loads(os.environ["FUSE_TEST_SITE"]):
    site.addsitedir(p)
from pathlib import Path
from driveros.review import ScratchWorkspace
from driveros.state import collect_garbage, mounts_under

def fs_types(base):
    out = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            left, _, right = line.partition(" - ")
            point = left.split(" ")[4]
            if point == str(base) or point.startswith(str(base) + "/"):
                out.append(right.split()[0])
    return out

REPO, BASE = Path(sys.argv[2]), Path(sys.argv[3])
"""

_SCRIPT = (
    _PRELUDE
    + """
async def view(obs):
    s = await ScratchWorkspace.create(REPO, base_dir=BASE, strategy="auto")
    try:
        obs.update(strategy=s.strategy, fallback=s.fallback_reason, types=fs_types(BASE))
        obs["env_visible"] = os.path.lexists(s.path / ".env")
        obs["build_visible"] = os.path.lexists(s.path / "build")
        obs["a_in_view"] = (s.path / "a.py").read_text()
        (s.path / "a.py").write_text("A = 2\\n")
        (s.path / "b.py").unlink()
        (s.path / "new.txt").write_text("n\\n")
        obs["changes"] = sorted((c.path, str(c.action)) for c in await s.changes())
        upper = s.path.parent / "upper"
        obs["upper"] = sorted(p.name for p in upper.iterdir())
        hide = s._lay.hide_layer
        obs["hide"] = sorted(p.name for p in hide.iterdir())
        obs["hide_fs"] = [line.split(" - ")[1].split()[0] for line in open("/proc/self/mountinfo")
                          if line.split()[4] == "/dev/shm"]
        obs["hide_in_shm"] = hide.parent == Path("/dev/shm")
    finally:
        await s.aclose()
    obs["hide_left"] = os.path.lexists(hide)
    obs["after_close"] = fs_types(BASE)
    obs["left"] = sorted(p.name for p in BASE.iterdir())

async def hang(obs):
    s = await ScratchWorkspace.create(REPO, base_dir=BASE, strategy="auto")
    print(json.dumps({"strategy": s.strategy, "path": str(s.path)}), flush=True)
    await asyncio.sleep(3600)

async def keep(obs):
    s = await ScratchWorkspace.create(REPO, base_dir=BASE, strategy="auto")
    obs["strategy"] = s.strategy
    (s.path / "a.py").write_text("A = 3\\n")
    await s.keep({"run_id": "r1"})
    await s.aclose()
    obs["after_close"] = fs_types(BASE)

async def reopen(obs):
    [kept] = await ScratchWorkspace.reopen_kept(workspace=REPO)
    s = kept.scratch
    obs["strategy"], obs["types"] = s.strategy, fs_types(BASE)
    obs["env_visible"] = os.path.lexists(s.path / ".env")
    obs["changes"] = [(c.path, c.after) for c in await s.changes()]
    await s.apply()
    await s.discard()
    obs.update(after_close=fs_types(BASE), left=sorted(p.name for p in BASE.iterdir()))

async def gc(obs):
    await collect_garbage()
    obs.update(after_gc=fs_types(BASE), left=sorted(p.name for p in BASE.iterdir()))

async def main():
    obs = {}
    if sys.argv[1] == "nomknod":  # an older kernel: no unprivileged 0/0 whiteouts
        def refuse(*args, **kwargs):
            raise PermissionError(1, "Operation not permitted")
        os.mknod = refuse
    modes = {"view": view, "nomknod": view, "hang": hang, "gc": gc, "keep": keep}
    await {**modes, "reopen": reopen}[sys.argv[1]](obs)
    print(json.dumps(obs), flush=True)

asyncio.run(main())
"""
)


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "these tests drop from root to an unprivileged uid"
    for cmd in ("setpriv", "fuse-overlayfs", "fusermount3"):
        if shutil.which(cmd) is None:
            return f"no {cmd} command (Debian packages util-linux, fuse-overlayfs)"
    try:
        if os.stat("/dev/fuse").st_mode & 0o006 != 0o006:
            return "/dev/fuse is not open to every user (.ci/run makes it 0666)"
    except OSError as exc:
        return f"no /dev/fuse: {exc.strerror}"
    return None


@pytest.fixture(scope="module")
def nobody_python() -> Iterator[tuple[str, list[str]]]:
    """An interpreter uid 65534 may run and site directories it can read driveros from."""
    why = _missing()
    if why is not None:
        if os.environ.get("DRIVEROS_CI"):
            pytest.fail(f"the unprivileged scratch view cannot be tested: {why}")
        pytest.skip(why)
    py, why = python_for_nobody()
    if py is None:
        pytest.skip(why)  # where the interpreter lives is no failure of driveros
    with sites_for_nobody(py, ["driveros.review", "driveros.state"]) as sites:
        yield py, sites


@pytest.fixture
def nobody(
    nobody_python: tuple[str, list[str]],
) -> Iterator[tuple[Path, Path, Callable[..., Any]]]:
    py, sites = nobody_python
    top = Path(tempfile.mkdtemp(prefix="driveros-fuse-"))
    top.chmod(0o755)
    repo = make_repo(
        top / "proj", {".gitignore": ".env\nbuild/\n", "a.py": "A = 1\n", "b.py": "B\n"}
    )
    write_files(repo, {".env": f"{SECRET}\n", "build/out.js": f"'{SECRET}'\n", "u.txt": "u\n"})
    base = top / "scratch"
    for d in (base, top / "home", top / "state"):
        d.mkdir()
    subprocess.run(["chown", "-R", f"{UID}:{UID}", str(top)], check=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(top / "home"),
        "DRIVEROS_STATE_DIR": str(top / "state"),
        "FUSE_TEST_SITE": json.dumps(sites),
    }

    def run(mode: str, **kw: Any) -> Any:
        # -S: only the sites given (a system interpreter's own packages never shadow them).
        argv = [*drop(), py, "-S", "-c", _SCRIPT, mode, str(repo), str(base)]
        if kw.get("background"):
            return subprocess.Popen(argv, env=env, cwd=top, stdout=subprocess.PIPE, text=True)
        done = subprocess.run(argv, env=env, cwd=top, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    try:
        yield repo, base, run
    finally:
        for point in mounts_under(top):
            subprocess.run(["umount", "-l", point], check=False)
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.parametrize("mode", ["view", "nomknod"])
def test_an_unprivileged_run_gets_a_fuse_view(
    nobody: tuple[Path, Path, Callable[..., Any]], mode: str
) -> None:
    repo, base, run = nobody
    before = tree(repo)
    obs = run(mode)
    assert obs["strategy"] == "fuse-overlay", obs["fallback"]
    assert obs["fallback"] == ""
    assert obs["types"] == ["fuse.fuse-overlayfs"]
    assert obs["a_in_view"] == "A = 1\n"
    # Ignored files are hidden from the view, as from a worktree copy.
    assert obs["env_visible"] is False and obs["build_visible"] is False
    assert obs["changes"] == [
        ["a.py", "modify"],
        ["b.py", "delete"],
        ["new.txt", "create"],
    ]
    # The hiding whiteouts are in the hide layer (a lower layer on the tmpfs /dev/shm), not in
    # the upper layer; without mknod they are fuse-overlayfs's .wh. files.
    hiders = {".wh..env", ".wh.build"} if mode == "nomknod" else {".env", "build"}
    assert obs["hide"] == sorted(hiders)
    assert obs["upper"] == ["a.py", "b.py", "new.txt"]  # b.py: the run's deletion
    if obs["hide_fs"] == ["tmpfs"]:
        assert obs["hide_in_shm"] is True
    assert obs["hide_left"] is False
    # The user's files are untouched; nothing stays mounted or on disk.
    assert tree(repo) == before
    assert obs["after_close"] == [] and obs["left"] == []
    assert mounts_under(base) == []


def test_a_killed_runs_fuse_view_is_unmounted_by_gc(
    nobody: tuple[Path, Path, Callable[..., Any]],
) -> None:
    _repo, base, run = nobody
    proc = run("hang", background=True)
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        assert first["strategy"] == "fuse-overlay"
        assert mounts_under(base) == [first["path"]]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # The FUSE daemon outlives its process: the view stays mounted until the next start.
    assert mounts_under(base) == [first["path"]]
    obs = run("gc")
    assert obs["after_gc"] == [] and obs["left"] == []
    assert mounts_under(base) == []


def test_a_kept_fuse_view_is_unmounted_and_reopened_by_the_next_process(
    nobody: tuple[Path, Path, Callable[..., Any]],
) -> None:
    repo, base, run = nobody
    obs = run("keep")
    assert obs["strategy"] == "fuse-overlay" and obs["after_close"] == []
    assert mounts_under(base) == []  # kept on disk, not mounted by a gone process
    obs = run("reopen")
    assert obs["strategy"] == "fuse-overlay" and obs["types"] == ["fuse.fuse-overlayfs"]
    assert obs["env_visible"] is False
    assert obs["changes"] == [["a.py", "A = 3\n"]]
    assert (repo / "a.py").read_text() == "A = 3\n"
    assert obs["after_close"] == [] and obs["left"] == []


def test_fuse_whiteout_files_are_read_as_deletions(tmp_path: Path) -> None:
    upper = tmp_path / "upper"
    write_files(
        upper,
        {
            ".wh.gone.py": "",
            "src/.wh.old.py": "",
            "src/new.py": "N\n",
            "redone/.wh..wh..opq": "",
            "redone/x.py": "X\n",
            ".wh..env": "",
        },
    )
    got = upper_candidates(upper, "", hidden=[".env"])
    assert "gone.py" in got and "src/old.py" in got and "redone" in got
    assert "src/new.py" in got and ".env" not in got


def test_hiding_falls_back_to_a_whiteout_file_when_mknod_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lower = make_repo(tmp_path / "lower", {"a.py": "A\n"})
    write_files(lower, {"out/deep/key.pem": "k\n"})
    upper = tmp_path / "upper"
    upper.mkdir()

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "mknod", refuse)
    assert hide_in_layer(upper, "out/deep/key.pem", lower)
    assert (upper / "out/deep/.wh.key.pem").is_file()
    assert hide_in_layer(upper, "out/deep/key.pem", lower)  # once only
    assert upper_candidates(upper, "", hidden=["out/deep/key.pem"]) == []


def test_the_unprivileged_process_imports_driveros_from_a_readable_copy() -> None:
    """The fallback used when the checkout is unreadable to uid 65534 (a 0700 home, a mktemp
    directory): a world-readable tree of links to driveros and its dependencies."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (util-linux) to drop to uid 65534")
    py, why = python_for_nobody()
    if py is None:
        pytest.skip(why)
    top = Path(tempfile.mkdtemp(prefix="driveros-site-test-"))  # 0700, as mktemp -d makes it
    try:
        copy = readable_site(top / "site")
        modules = ["driveros.review", "driveros.state"]
        assert "No module named 'driveros'" in imports_as_nobody(py, [str(copy)], modules)
        top.chmod(0o755)  # what the harness's own temporary directory is
        assert imports_as_nobody(py, [str(copy)], modules) == ""
        assert not any(p.suffix == ".pth" for p in copy.iterdir())
    finally:
        shutil.rmtree(top)
