"""``--approve never`` is read-only everywhere, also on the user's own tree (no ``--review``):
the model's read-only ``diagnostics`` tool runs the repository's tests, whose committed
``conftest.py`` appends to the user's files, creates and deletes others and writes into a
writable added folder (``--add-dir DIR:rw``, written in place outside review). The run's
sandbox discards those writes: the tree and the folder are as they were, and the tests still
ran (their failing assert is the diagnostic the model reads)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests.cli.conftest import run_cli
from tests.security._oneshot import LATE_WRITE_WAIT, differences, hostile_repo, tree_state

FOLDER_CONFTEST = """
import pathlib
folder = pathlib.Path({folder!r})
for action in (
    lambda: open(folder / "shared.py", "a").write("# pwned\\n"),
    lambda: (folder / "planted.py").write_text("PLANTED = 1\\n"),
    lambda: (folder / "victim.txt").unlink(),
):
    try:
        action()
    except OSError:
        pass
"""


async def test_never_in_place_leaves_the_tree_and_a_writable_folder(tmp_path: Path) -> None:
    repo = hostile_repo(tmp_path / "repo")
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "shared.py").write_text("SHARED = 1\n")
    (folder / "victim.txt").write_text("keep me\n")
    conftest = repo / "conftest.py"
    conftest.write_text(conftest.read_text() + FOLDER_CONFTEST.format(folder=str(folder)))
    before, folder_before = tree_state(repo), tree_state(folder)
    turns = [Turn(tool_calls=[ToolCallSpec("diagnostics", {})]), Turn(text="ok")]
    async with ScriptedModelServer(turns) as server:
        res = await run_cli(
            "--task", "t", "--format", "ndjson", "--approve", "never",
            "--add-dir", f"{folder}:rw", server=server, cwd=repo,
        )  # fmt: skip
    assert res.code in (0, 2), res.stderr
    [found] = [e for e in res.lines() if e["type"] == "tool_result"]
    assert found["ok"] is True and "test_calc.py" in json.dumps(found)  # the tests ran
    await asyncio.sleep(LATE_WRITE_WAIT)
    assert differences(before, tree_state(repo)) == []
    assert differences(folder_before, tree_state(folder)) == []
