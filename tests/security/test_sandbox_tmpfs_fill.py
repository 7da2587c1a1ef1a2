"""A command in a run's ordinary local sandbox (the workspace writable) fills ``/tmp``,
``/var/tmp``, ``/run``, ``/dev/shm`` and ``/dev``: each was an unbounded tmpfs (half the
machine's memory apiece; a conftest filling ``/tmp`` had the kernel's OOM killer end processes
outside the sandbox). Each now stops at its size with ENOSPC (``/dev`` is read-only), the
command's own failure; the sandbox keeps answering."""

from __future__ import annotations

import sys
from pathlib import Path

from driveros.sandbox import LocalSandbox

ENV = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
SMALL = 8 << 20
PLACES = ("/tmp", "/var/tmp", "/run", "/dev/shm", "/dev")


async def test_sandbox_tmpfs_fill_every_system_tmpfs_is_bounded(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    fill = "\n".join(
        f"head -c {8 * SMALL} /dev/zero > {p}/fill.bin 2>/dev/null; "
        f"echo '{p}' $(stat -c %s {p}/fill.bin 2>/dev/null || echo 0)"
        for p in PLACES
    )
    async with LocalSandbox(ws, base_env=ENV, tmpfs_bytes=SMALL) as box:
        done = await box.run(fill)
        written = dict(line.split() for line in done.stdout.splitlines())
        assert set(written) == set(PLACES), done.stdout + done.stderr
        for place, size in written.items():
            assert int(size) <= SMALL, (place, size)
        again = await box.run("echo alive > alive.txt && cat alive.txt")
        assert again.stdout == "alive\n"  # the workspace is still written as usual
    assert (ws / "alive.txt").read_text() == "alive\n"
