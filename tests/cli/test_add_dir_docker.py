"""``driveros agent --sandbox docker --add-dir DIR[:rw]``: the container binds each added folder
at its own absolute path (read-only, a review run's view of it, or in place with its ``.git``
read-only), and the file tools reach it host-side exactly as in the local tier."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from .conftest import run_cli, run_ndjson
from .test_add_dir_rw import LIB, _assert_kept, _change_both, _other, _proposed, _turns
from .test_agent_docker import docker_ready as docker_ready  # the fixture
from .test_runs_cli import runs

pytestmark = pytest.mark.docker
DOCKER = ("--sandbox", "docker")


async def test_docker_reads_a_read_only_added_folder_and_cannot_write_it(
    calc_repo: Path, tmp_path: Path, docker_ready: None
) -> None:
    other = _other(tmp_path)
    turns = [
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": f"{other}/lib.py"})]),
        Turn(tool_calls=[ToolCallSpec("run", {"command": f"cat {other}/lib.py"})]),
        Turn(tool_calls=[ToolCallSpec("run", {"command": f"echo x > {other}/new.txt"})]),
        Turn(tool_calls=[ToolCallSpec("write_file", {"path": f"{other}/x.py", "content": "x"})]),
        Turn(text="read it"),
    ]
    async with ScriptedModelServer(turns) as server:
        run = await run_ndjson(
            "read the other folder",
            *(*DOCKER, "--add-dir", str(other)),
            server=server,
            cwd=calc_repo,
            review_action="discard",
        )
    assert run.code == 0, (run.stderr, run.stdout[-3000:])
    read, cat, echo, write = run.events("tool_result")
    assert read["ok"] and "return 1" in read["output"], read
    assert cat["ok"] and "return 1" in cat["output"], cat
    assert "Read-only file system" in echo["output"], echo
    assert not write["ok"] and "read-only added folder" in write["output"], write
    assert sorted(p.name for p in other.iterdir()) == ["lib.py", "notes.txt"]


def _rw_turns(other: Path) -> list[Turn]:
    """test_add_dir_rw's turns, the last command also saying which uid ran it."""
    return _turns(other, then="; id -u")


@pytest.mark.parametrize(
    ("action", "untrusted"), [("keep", False), ("discard", False), ("keep", True)]
)
async def test_docker_review_proposes_an_rw_folder_with_the_workspace(
    calc_repo: Path, tmp_path: Path, docker_ready: None, action: str, untrusted: bool
) -> None:
    """``untrusted``: under gVisor (runsc), where the views are copies."""
    other = _other(tmp_path)
    before = {p.name: p.read_text() for p in other.iterdir()}
    async with ScriptedModelServer(_rw_turns(other)) as server:
        untrusted_args = ["--untrusted"] if untrusted else []
        run = await _change_both(other, server, calc_repo, action, *DOCKER, *untrusted_args)
    assert run.code == 0, (run.stderr, run.stdout[-3000:])
    results = run.events("tool_result")
    assert all(r["ok"] for r in results), results
    assert results[-1]["output"].split()[-1] != "0"  # never root in the container
    (proposal,) = run.events("proposal")
    assert {(f["path"], f["action"]) for f in proposal["files"]} == _proposed(other)
    if action == "keep":
        _assert_kept(calc_repo, other)
    else:
        assert (calc_repo / "calc.py").read_text().endswith("a - b\n")
        assert {p.name: p.read_text() for p in other.iterdir()} == before


async def test_docker_held_run_with_an_rw_folder_applies_later(
    calc_repo: Path, tmp_path: Path, docker_ready: None
) -> None:
    other = _other(tmp_path)
    async with ScriptedModelServer(_rw_turns(other)) as server:
        run = await _change_both(other, server, calc_repo, "hold", *DOCKER)
    assert run.code == 0, (run.stderr, run.stdout[-3000:])
    run_id = str(run.lines()[-1]["run_id"])
    assert (other / "lib.py").read_text() == LIB  # held: nothing written
    shown = await runs("show", run_id, "--format", "json", cwd=calc_repo)
    assert shown.json()["folders"] == [str(other)]
    files = [f for c in shown.json()["checkpoints"] for f in c["files"]]
    assert f"{other}/lib.py" in files and "calc.py" in files
    applied = await runs("apply", run_id, cwd=calc_repo)
    assert applied.code == 0, applied.stderr
    assert (calc_repo / "calc.py").read_text().endswith("a + b\n")
    assert (other / "lib.py").read_text() == "def helper():\n    return 2\n"
    assert (other / "made.txt").read_text() == "made\n"


async def test_docker_refuses_a_folder_it_cannot_bind_before_any_request(
    calc_repo: Path,
) -> None:
    # A folder under /dev, where the container has its own: it cannot be shown at its path.
    with tempfile.TemporaryDirectory(dir="/dev/shm") as under_dev:
        await _refused(calc_repo, under_dev)


async def _refused(calc_repo: Path, folder: str) -> None:
    async with ScriptedModelServer([Turn(text="never asked")]) as server:
        run = await run_cli(
            "--task",
            "t",
            "--sandbox",
            "docker",
            "--add-dir",
            folder,
            "--format",
            "json",
            server=server,
            cwd=calc_repo,
        )
        assert server.received == []
    assert run.code == 1, run.stderr
    assert run.json()["outcome"] == "setup_error"
    assert "overlaps /dev in the container" in run.stderr and "Traceback" not in run.stderr
