"""``driveros agent --add-dir DIR:rw --review``: a second writable folder with its own scratch
view, proposed with the workspace (its files by absolute path), applied with the same planner
and conflict rules, and never written before the review says so."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from pathlib import Path

from tests._scripted import FIX_CALC
from tests.review._repo import git, make_repo

from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

from .conftest import CliRun, run_ndjson
from .test_runs_cli import runs

LIB = "def helper():\n    return 1\n"


def _other(tmp_path: Path) -> Path:
    other = tmp_path / "other"
    other.mkdir()
    (other / "lib.py").write_text(LIB)
    (other / "notes.txt").write_text("old note\n")
    return other


def _change_both(
    other: Path, server: ScriptedModelServer, cwd: Path, review_action: str | None, *args: str
) -> Awaitable[CliRun]:
    """``driveros agent`` with ``other`` added writable (``args``: more flags)."""
    return run_ndjson(
        "change both folders",
        *("--add-dir", f"{other}:rw", *args),
        server=server,
        cwd=cwd,
        review_action=review_action,
    )


def _proposed(other: Path) -> set[tuple[str, str]]:
    """The files a run of :func:`_turns` proposes, with their actions."""
    return {
        ("calc.py", "modify"),
        (f"{other}/lib.py", "modify"),
        (f"{other}/made.txt", "create"),
        (f"{other}/notes.txt", "modify"),
    }


def _assert_kept(cwd: Path, other: Path) -> None:
    """Both folders hold what a run of :func:`_turns` wrote."""
    assert (cwd / "calc.py").read_text().endswith("a + b\n")
    assert (other / "lib.py").read_text() == "def helper():\n    return 2\n"
    assert (other / "notes.txt").read_text() == "new note\n"
    assert (other / "made.txt").read_text() == "made\n"


async def _held(other: Path, cwd: Path) -> str:
    """The id of a run of :func:`_turns` held for review (nothing written)."""
    async with ScriptedModelServer(_turns(other)) as server:
        run = await _change_both(other, server, cwd, "hold")
    assert run.code == 0, (run.stderr, run.stdout[-3000:])
    return str(run.lines()[-1]["run_id"])


def _turns(other: Path, *, answer_delay: float = 0.0, then: str = "") -> list[Turn]:
    """Edit the workspace, then ``other`` with a file tool and the shell (``then``: more shell
    after the last command)."""
    return [
        Turn(tool_calls=[FIX_CALC]),
        Turn(
            tool_calls=[
                ToolCallSpec(
                    "edit_file",
                    {"path": f"{other}/lib.py", "old_string": "return 1", "new_string": "return 2"},
                )
            ]
        ),
        # a shell edit in the folder lands in its view too
        Turn(
            tool_calls=[
                ToolCallSpec("run", {"command": f"sed -i s/old/new/ {other}/notes.txt"}),
                ToolCallSpec("run", {"command": f"echo made > {other}/made.txt{then}"}),
            ]
        ),
        Turn(text="done in both", delay_s=answer_delay),
    ]


async def test_add_dir_rw_proposes_both_folders_and_keep_writes_both(
    calc_repo: Path, tmp_path: Path
) -> None:
    other = _other(tmp_path)
    async with ScriptedModelServer(_turns(other)) as server:
        run = await _change_both(other, server, calc_repo, "keep")
    assert run.code == 0, (run.stderr, run.stdout[-3000:])
    results = run.events("tool_result")
    assert all(r["ok"] for r in results), results
    (proposal,) = run.events("proposal")
    assert {(f["path"], f["action"]) for f in proposal["files"]} == _proposed(other)
    lib_diff = next(f["diff"] for f in proposal["files"] if f["path"].endswith("lib.py"))
    assert f"--- a{other}/lib.py" in lib_diff and "+    return 2" in lib_diff
    checkpoints = [e["files"] for e in run.events("checkpoint")]
    assert f"{other}/lib.py" in [f for files in checkpoints for f in files]
    _assert_kept(calc_repo, other)
    assert "applied 4 files" in run.stderr


async def test_add_dir_rw_discard_writes_nothing_anywhere(calc_repo: Path, tmp_path: Path) -> None:
    other = _other(tmp_path)
    before = {p.name: p.read_text() for p in other.iterdir()}
    async with ScriptedModelServer(_turns(other)) as server:
        run = await _change_both(other, server, calc_repo, "discard")
    assert run.code == 0, (run.stderr, run.stdout[-3000:])
    assert run.events("proposal")
    assert {p.name: p.read_text() for p in other.iterdir()} == before
    assert (calc_repo / "calc.py").read_text().endswith("a - b\n")


async def test_add_dir_rw_users_edit_during_the_run_conflicts_and_nothing_is_written(
    calc_repo: Path, tmp_path: Path
) -> None:
    other = _other(tmp_path)
    turns = _turns(other, answer_delay=1.5)
    mine = "def helper():\n    return 99  # mine\n"
    async with ScriptedModelServer(turns) as server:

        async def user_edits() -> None:
            while len(server.requests) < len(turns):  # the answer is being waited for
                await asyncio.sleep(0.05)
            (other / "lib.py").write_text(mine)

        run, _ = await asyncio.gather(
            _change_both(other, server, calc_repo, "keep"),
            user_edits(),
        )
    assert run.code == 1, (run.stderr, run.stdout[-3000:])
    assert f"{other}/lib.py" in run.stderr and "nothing was written" in run.stderr
    assert "Traceback" not in run.stderr
    assert (other / "lib.py").read_text() == mine
    assert (other / "notes.txt").read_text() == "old note\n"
    assert not (other / "made.txt").exists()
    assert (calc_repo / "calc.py").read_text().endswith("a - b\n")  # the workspace neither


async def test_add_dir_rw_hold_then_runs_diff_apply_and_discard_cover_the_folder(
    calc_repo: Path, tmp_path: Path
) -> None:
    other = _other(tmp_path)
    run_id = await _held(other, calc_repo)
    assert (other / "lib.py").read_text() == LIB  # held: nothing written

    shown = await runs("show", run_id, "--format", "json", cwd=calc_repo)
    assert shown.code == 0, shown.stderr
    cps = [(c["checkpoint"], c["files"]) for c in shown.json()["checkpoints"]]
    assert cps == [
        (1, ["calc.py"]),
        (2, [f"{other}/lib.py"]),
        (3, [f"{other}/made.txt", f"{other}/notes.txt"]),
    ]
    assert shown.json()["folders"] == [str(other)]
    diff = await runs("diff", run_id, "--through", "2", cwd=calc_repo)
    assert f"+++ b{other}/lib.py" in diff.stdout and "b/calc.py" in diff.stdout
    assert "notes.txt" not in diff.stdout
    one = await runs("diff", run_id, "--turn", "3", cwd=calc_repo)
    assert f"b{other}/notes.txt" in one.stdout and "calc.py" not in one.stdout

    applied = await runs("apply", run_id, "--through", "2", cwd=calc_repo)
    assert applied.code == 0, applied.stderr
    assert (calc_repo / "calc.py").read_text().endswith("a + b\n")
    assert (other / "lib.py").read_text() == "def helper():\n    return 2\n"
    assert (other / "notes.txt").read_text() == "old note\n"  # checkpoint 3 not applied

    gone = await runs("discard", run_id, cwd=calc_repo)
    assert gone.code == 0, gone.stderr
    assert (await runs("list", "--format", "json", cwd=calc_repo)).json() == []
    assert not (other / "made.txt").exists()


async def test_add_dir_rw_held_apply_conflict_in_the_folder_writes_nothing(
    calc_repo: Path, tmp_path: Path
) -> None:
    other = _other(tmp_path)
    run_id = await _held(other, calc_repo)
    (other / "notes.txt").write_text("the user's note\n")
    applied = await runs("apply", run_id, cwd=calc_repo)
    assert applied.code == 1, applied.stderr
    assert f"{other}/notes.txt" in applied.stderr and "Traceback" not in applied.stderr
    assert (calc_repo / "calc.py").read_text().endswith("a - b\n")
    assert (other / "lib.py").read_text() == LIB
    assert (other / "notes.txt").read_text() == "the user's note\n"
    still = await runs("show", run_id, "--format", "json", cwd=calc_repo)
    assert len(still.json()["checkpoints"]) == 3  # still held
    await runs("discard", run_id, cwd=calc_repo)


async def test_add_dir_rw_without_review_is_written_in_place(
    calc_repo: Path, tmp_path: Path
) -> None:
    other = _other(tmp_path)
    made = ToolCallSpec("write_file", {"path": f"{other}/made.txt", "content": "made\n"})
    turns = [*_turns(other)[:2], Turn(tool_calls=[made]), Turn(text="done")]
    async with ScriptedModelServer(turns) as server:
        run = await _change_both(other, server, calc_repo, None)
    assert run.code == 0, (run.stderr, run.stdout[-3000:])
    assert all(e["ok"] for e in run.events("tool_result"))
    assert (calc_repo / "calc.py").read_text().endswith("a + b\n")
    assert (other / "lib.py").read_text() == "def helper():\n    return 2\n"
    assert (other / "made.txt").read_text() == "made\n"


async def test_add_dir_rw_commit_commits_each_folder_in_its_own_repository(
    git_repo: Path, tmp_path: Path
) -> None:
    other = _other(tmp_path)
    make_repo(other, {})  # its files committed
    async with ScriptedModelServer(_turns(other)) as server:
        run = await _change_both(other, server, git_repo, "commit")
    assert run.code == 0, (run.stderr, run.stdout[-3000:])
    assert run.stderr.count("driveros: review: committed ") == 2
    assert git(git_repo, "show", "--name-only", "--format=%s", "HEAD").split() == [
        "driveros:",
        "change",
        "both",
        "folders",
        "calc.py",
    ]
    shown = git(other, "show", "--name-only", "--format=%s", "HEAD").split()
    assert shown[-3:] == ["lib.py", "made.txt", "notes.txt"]
    assert git(other, "status", "--porcelain") == ""


async def test_add_dir_rw_fork_and_resume_continue_in_the_folders_view_and_revert_too(
    calc_repo: Path, tmp_path: Path
) -> None:
    other = _other(tmp_path)
    run_id = await _held(other, calc_repo)

    fork_turns = [
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": f"{other}/lib.py"})]),
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": f"{other}/notes.txt"})]),
        Turn(text="Forked."),
    ]
    async with ScriptedModelServer(fork_turns) as server:
        forked = await run_ndjson(
            "fork it", "--resume", run_id, "--from", "2", server=server, cwd=calc_repo
        )
    assert forked.code == 0, (forked.stderr, forked.stdout[-3000:])
    seen = [e["output"] for e in forked.events("tool_result")]
    assert seen == ["def helper():\n    return 2\n", "old note\n"]  # checkpoint 2's state
    fork_id = forked.lines()[-1]["run_id"]
    assert fork_id != run_id
    dropped = await runs("discard", fork_id, cwd=calc_repo)
    assert dropped.code == 0, dropped.stderr

    follow = [
        Turn(tool_calls=[ToolCallSpec("read_file", {"path": f"{other}/lib.py"})]),
        Turn(
            tool_calls=[ToolCallSpec("write_file", {"path": f"{other}/more.txt", "content": "4\n"})]
        ),
        Turn(text="Followed up."),
    ]
    async with ScriptedModelServer(follow) as server:
        again = await run_ndjson("one more", "--resume", run_id, server=server, cwd=calc_repo)
    assert again.code == 0, (again.stderr, again.stdout[-3000:])
    results = again.events("tool_result")
    assert results[0]["output"] == "def helper():\n    return 2\n"  # the held view's state
    cps = [(e["checkpoint"], e["files"]) for e in again.events("checkpoint")]
    assert cps == [(4, [f"{other}/more.txt"])]
    assert not (other / "more.txt").exists()

    reverted = await runs("revert", run_id, "--to", "2", cwd=calc_repo)
    assert reverted.code == 0, reverted.stderr
    rest = await runs("diff", run_id, cwd=calc_repo)
    assert f"b{other}/lib.py" in rest.stdout
    assert "more.txt" not in rest.stdout and "notes.txt" not in rest.stdout
    applied = await runs("apply", run_id, cwd=calc_repo)
    assert applied.code == 0, applied.stderr
    assert (other / "lib.py").read_text() == "def helper():\n    return 2\n"
    assert (other / "notes.txt").read_text() == "old note\n"
    assert not (other / "more.txt").exists() and not (other / "made.txt").exists()
    assert (await runs("list", "--format", "json", cwd=calc_repo)).json() == []


async def test_add_dir_a_task_across_several_folders(calc_repo: Path, tmp_path: Path) -> None:
    first, second, docs = tmp_path / "first", tmp_path / "second", tmp_path / "docs"
    for folder in (first, second, docs):
        folder.mkdir()
        (folder / "v.txt").write_text(f"{folder.name} 1\n")
    turns = [
        Turn(
            tool_calls=[
                ToolCallSpec("read_file", {"path": f"{docs}/v.txt"}),
                ToolCallSpec("run", {"command": f"sed -i s/1/2/ {first}/v.txt {second}/v.txt"}),
                ToolCallSpec("write_file", {"path": "from_docs.txt", "content": "docs 1\n"}),
            ]
        ),
        Turn(text="all three"),
    ]
    async with ScriptedModelServer(turns) as server:
        run = await run_ndjson(
            "bump both",
            *("--add-dir", f"{first}:rw", "--add-dir", f"{second}:rw", "--add-dir", str(docs)),
            server=server,
            cwd=calc_repo,
            review_action="keep",
        )
    assert run.code == 0, (run.stderr, run.stdout[-3000:])
    (proposal,) = run.events("proposal")
    assert sorted(f["path"] for f in proposal["files"]) == sorted(
        ["from_docs.txt", f"{first}/v.txt", f"{second}/v.txt"]
    )
    assert (first / "v.txt").read_text() == "first 2\n"
    assert (second / "v.txt").read_text() == "second 2\n"
    assert (docs / "v.txt").read_text() == "docs 1\n"
    assert (calc_repo / "from_docs.txt").read_text() == "docs 1\n"
