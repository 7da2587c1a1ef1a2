"""Row 6 of issue 28, the batch entry points: ``driveros eval run`` and ``driveros issue-bot``
reclaim what a killed driveros process left (a scratch directory with a mount in it, its
lease) when they start, as the CLI, the language server and ``driveros acp`` do. Each start
here fails right after (no such suite; no provider configured): the cleanup comes first."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from driveros.state import Lease, list_leases, mounts_under
from tests.cli.conftest import DRIVEROS, cli_environ


async def _killed_owners_copy(tmp_path: Path) -> Path:
    root = tmp_path / "driveros-scratch-dead"
    (root / "view").mkdir(parents=True)
    if os.geteuid() == 0:
        subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(root / "view")], check=True)
    lease = await Lease.create("scratch", paths=[root])
    record = lease.record.model_dump(mode="json")
    record["owner"] = {**record["owner"], "start": "0"}  # its process is gone
    lease.file.write_text(json.dumps(record))
    return root


@pytest.mark.parametrize(
    ("argv", "stdin"),
    [
        (("eval", "run", "no-such-suite"), None),
        (("issue-bot", "-", "--no-record"), "# Fix add\n\nadd() subtracts.\n"),
    ],
    ids=["eval run", "issue-bot"],
)
async def test_batch_entry_point_start_reclaims_a_killed_process_leftovers(
    tmp_path: Path, argv: tuple[str, ...], stdin: str | None
) -> None:
    root = await _killed_owners_copy(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    done = subprocess.run(
        [str(DRIVEROS), *argv, *(("--workspace", str(ws)) if argv[0] == "issue-bot" else ())],
        input=stdin or "",
        capture_output=True,
        text=True,
        env=cli_environ(None),
        cwd=ws,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr  # it fails after the cleanup ...
    assert "Traceback" not in done.stderr
    assert await list_leases() == []  # ... which removed the lease, the mount, the copy
    assert mounts_under(root) == []
    assert not root.exists()
