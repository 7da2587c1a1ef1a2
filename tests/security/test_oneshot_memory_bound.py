"""The one-shot feed sandbox (``LocalSandbox(ws, discard_writes=True)``) holds what its commands
write in memory, never on the host's disk: a hostile ``conftest.py`` could pin a tmpfs's worth
per place it may write (the overlay's upper layer, HOME, TMPDIR, ``/tmp``, ``/var/tmp``,
``/run``, ``/dev/shm``) and push the machine into the OOM killer. Those places are one tmpfs,
so the sum of what a command can write across all of them stays within one bound, itself at
most 1 GiB and a quarter of the memory available. Tested with a small bound (never gigabytes).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from driveros.intel import DiagnosticsFeed
from driveros.sandbox import LocalSandbox
from driveros.sandbox import _local as local_tier
from driveros.sandbox import _oneshot as oneshot
from tests.security._oneshot import access as access  # the fixture
from tests.security._oneshot import fill_command, fill_conftest

ENV = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
#: The bound the tests give the sandbox.
BOUND = 8 << 20
#: Every place a command may write besides the workspace (``.``, the overlay's upper layer).
PLACES = ("$HOME", "$TMPDIR", "/tmp", "/var/tmp", "/run", "/dev/shm")


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    return repo


async def test_oneshot_every_place_together_holds_at_most_the_bound(
    tmp_path: Path, access: str
) -> None:
    repo = _repo(tmp_path)
    async with LocalSandbox(repo, base_env=ENV, discard_writes=True, tmpfs_bytes=BOUND) as box:
        await box.start()
        assert box.workspace_access == access
        # Half the bound each: seven separate tmpfs of BOUND would take 3.5 bounds in all.
        done = await box.run(fill_command(BOUND // 2, PLACES))
        written = {k: int(v) for k, v in (line.split() for line in done.stdout.splitlines())}
        assert set(written) == {".", *PLACES}, done.stdout + done.stderr
        assert sum(written.values()) <= BOUND, written
        assert written["."] == (BOUND // 2 if access == "overlay" else 0), written
        # The places are one file system: a single tmpfs of the bound.
        seen = await box.run("stat -f -c '%b %S' " + " ".join(f'"{p}"' for p in PLACES))
        sizes = [int(b) * int(s) for b, s in (line.split() for line in seen.stdout.splitlines())]
        assert sizes == [BOUND] * len(PLACES), seen.stdout + seen.stderr
        freed = await box.run("rm -f " + " ".join(f"{p}/fill.bin" for p in (".", *PLACES)))
        assert freed.exit_code == 0, freed
        again = await box.run(f"head -c {BOUND // 2} /dev/zero > /dev/shm/x && echo room")
        assert again.stdout == "room\n", again  # what was freed anywhere is room everywhere
    assert sorted(p.name for p in repo.iterdir()) == ["calc.py"]


def test_oneshot_bound_is_at_most_a_gib_and_a_quarter_of_available_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gib = 1 << 30
    for available, limit, expected in [
        (64 * gib, 2 * gib, gib),  # a large machine: 1 GiB
        (2 * gib, 2 * gib, gib // 2),  # a quarter of what is available
        (100 << 20, 2 * gib, 64 << 20),  # never below the floor...
        (100 << 20, 8 << 20, 8 << 20),  # ...unless the sandbox's own limit is
        (None, 2 * gib, gib),  # no /proc/meminfo: the fixed cap
    ]:
        monkeypatch.setattr(oneshot, "_mem_available", lambda value=available: value)
        assert oneshot.one_shot_bytes(limit) == expected, (available, limit)


async def test_oneshot_without_a_namespace_of_its_own_bounds_each_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the helper cannot make its namespace (a setuid bubblewrap, no user namespaces
    for driveros itself), the sandbox still starts read-only, each place its own tmpfs."""
    repo = _repo(tmp_path)
    monkeypatch.setattr(local_tier, "overlay_prefix", lambda *_: None)
    monkeypatch.setattr(local_tier, "scratch_prefix", lambda *_: ["/bin/false"])
    async with LocalSandbox(repo, base_env=ENV, discard_writes=True, tmpfs_bytes=BOUND) as box:
        await box.start()
        assert box.workspace_access == "read-only"
        done = await box.run(fill_command(2 * BOUND, PLACES))
        written = {k: int(v) for k, v in (line.split() for line in done.stdout.splitlines())}
        assert set(written) == {".", *PLACES}, done.stdout + done.stderr
        assert written["."] == 0 and all(v <= BOUND for v in written.values()), written
    assert sorted(p.name for p in repo.iterdir()) == ["calc.py"]


async def test_oneshot_a_conftest_the_feed_imports_pins_at_most_the_bound(
    tmp_path: Path, access: str
) -> None:
    """The feed's pytest imports a conftest that writes half the bound into every place: what
    stays pinned in the sandbox afterwards is within the bound, and the snapshot comes back."""
    repo = _repo(tmp_path)
    (repo / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    (repo / "conftest.py").write_text(fill_conftest(PLACES, BOUND // 2))
    env = {**ENV, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    async with LocalSandbox(repo, base_env=env, discard_writes=True, tmpfs_bytes=BOUND) as box:
        snapshot = await DiagnosticsFeed(box).snapshot()
        assert "pytest" in snapshot.checks
        sizes = " ".join(f'"{p}/fill.bin"' for p in (".", *PLACES))
        left = await box.run(f"stat -c %s {sizes} 2>/dev/null; true")
        pinned = [int(n) for n in left.stdout.split()]
        assert pinned and sum(pinned) <= BOUND, left.stdout + left.stderr
        assert max(pinned) == BOUND // 2, pinned  # the conftest did run
    assert sorted(p.name for p in repo.iterdir()) == ["calc.py", "conftest.py", "test_calc.py"]
