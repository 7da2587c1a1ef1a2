"""The allowlist with an added read-only folder (``--add-dir``), the proof: hostile commands
naming the folder, a look-alike of it, a link out of it and ``..`` beside it; every one the
local tier's policy allows is run under ``dash -c`` with strace, and may open nothing outside
the workspace and the folder (system files the programs need aside)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from driveros.approval import FolderAccess

from ._trace import outside, trace_command
from .test_allowlist_fuzz import _environ, decide, fuzzing
from .test_allowlist_fuzz import world as world  # the fixture: workspace, outside, home

PROGRAMS = ["cat", "head", "ls", "grep -r x", "rg x", "find", "wc", "stat", "pytest -q"]
#: Relative to the folder's parent: the folder, its look-alike, and ways out of both.
ATOMS = [
    "lib",
    "lib/u.txt",
    "lib/*",
    "lib/./*",
    "lib/*/*",
    "lib/out",
    "lib/out/secret.txt",
    "lib/*/secret.txt",
    "lib/.?/outside/secret.txt",
    "lib/../outside/secret.txt",
    "lib/inner/u.txt",
    "libx/secret.txt",
    "libx",
    "lib*/secret.txt",
]
PREFIXES = ["", "cd {base}/lib && ", "cd {base}/lib/inner; ", "PYTHONPATH={base}/lib "]
RELATIVE = ["", "u.txt", "*", "./*", "out/secret.txt", "./out/*", "../libx/secret.txt"]


@pytest.fixture(scope="module")
def folder(world: dict[str, Path]) -> Path:
    """``lib`` beside the workspace (read-only for the run), with a link out of it and an
    inner link that stays; ``libx`` beside it holds what must stay unread."""
    base = world["base"]
    lib, libx = base / "lib", base / "libx"
    lib.mkdir()
    libx.mkdir()
    (lib / "u.txt").write_text("x in the library\n")
    (lib / "out").symlink_to(base / "outside")
    (lib / "inner").symlink_to(".")
    (libx / "secret.txt").write_text("look-alike secret\n")
    return lib


@fuzzing(150)
@given(
    prefix=st.sampled_from(PREFIXES),
    program=st.sampled_from(PROGRAMS),
    args=st.lists(st.sampled_from(ATOMS), max_size=3),
    relative=st.sampled_from(RELATIVE),
)
def test_allowlist_with_a_folder_allows_only_reads_inside_it(
    world: dict[str, Path],
    folder: Path,
    tmp_path: Path,
    prefix: str,
    program: str,
    args: list[str],
    relative: str,
) -> None:
    base = world["base"]
    named = " ".join(f"{base}/{a}" for a in args)
    command = f"{prefix.format(base=base)}{program} {named} {relative}".strip()
    decision = decide(command, world, [FolderAccess(path=str(folder))])
    event("allowed" if decision.allowed else "refused")
    if not decision.allowed:
        return
    if program.startswith("pytest"):  # a runner never names the read-only folder
        assert not re.search(rf"{re.escape(str(folder))}(/|\s|;|$)", command), command
    tmp = tmp_path / f"t{abs(hash(command))}"
    tmp.mkdir(parents=True, exist_ok=True)
    trace = trace_command(command, cwd=world["ws"], env=_environ(world), out=tmp)
    allowed = (str(world["ws"]), str(world["home"]), str(tmp), str(folder))
    escaped = outside(trace, allowed=allowed)
    assert escaped == [], f"{command!r} opened {escaped}"
