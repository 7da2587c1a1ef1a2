"""The one-shot feed's sandbox without root: as ``nobody`` the throwaway overlay is laid in
an unprivileged user namespace (no setuid helper), commands write in it, and the tree (here
writable by ``nobody``) is as it was afterwards."""

from __future__ import annotations

import os
from pathlib import Path

from tests.security._oneshot import differences, tree_state
from tests.security._unprivileged import nobody_workspace as nobody_workspace  # the fixture
from tests.security._unprivileged import run_unprivileged

NOBODY = 65534
AS_NOBODY = """
import asyncio, json, os, sys
sys.path[:0] = json.loads(sys.argv[2])
from driveros.sandbox import LocalSandbox

async def main():
    async with LocalSandbox(sys.argv[1], discard_writes=True) as box:
        res = await box.run(
            "id -u; echo x >> f.txt; touch new.txt; rm -f gone.txt; chmod 700 f.txt; "
            "cat f.txt; ls"
        )
        print(json.dumps({"uid": os.getuid(), "stdout": res.stdout, "code": res.exit_code,
                          "stderr": res.stderr, "access": box.workspace_access}))

asyncio.run(main())
"""


def test_oneshot_overlay_as_an_unprivileged_user(nobody_workspace: Path) -> None:
    (nobody_workspace / "f.txt").write_text("orig\n")
    (nobody_workspace / "gone.txt").write_text("stay\n")
    if os.geteuid() == 0:  # the user's own tree, as a user's would be
        for path in [nobody_workspace, *nobody_workspace.iterdir()]:
            os.chown(path, NOBODY, NOBODY)
    before = tree_state(nobody_workspace)
    report = run_unprivileged(AS_NOBODY, nobody_workspace)
    assert report["uid"] != 0 and report["code"] == 0, report
    assert report["access"] == "overlay", report
    said = report["stdout"].split()
    assert said == [str(report["uid"]), "orig", "x", "f.txt", "new.txt"], report
    assert differences(before, tree_state(nobody_workspace)) == []
