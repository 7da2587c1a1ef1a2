"""Accept under faults: sent twice while the first applyEdit is unanswered, confirmed by a
VS Code-like client and run again, and files that are not open changing on disk around the edit
(a racing writer). The edit is never sent twice and never lands on the wrong lines unnoticed."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from driveros.testing import ScriptedModelServer
from driveros_lsp import protocol
from tests.server._lsp import Editor, editor_session
from tests.server.conftest import CALC, model_env
from tests.server.conftest import private_state as private_state  # isolated state (autouse)
from tests.server.test_flow import FIX_TURNS, SETTINGS, run_state, start_run, wait_state

FIXED = CALC.replace("return a - b", "return a + b")


def _workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    return root


async def _proposed(ed: Editor) -> str:
    return await start_run(ed, "fix add")


async def _summary(ed: Editor, run_id: str) -> dict[str, object]:
    listing = await ed.command(protocol.CMD_AGENT_LIST)
    return dict(next(r for r in listing["runs"] if r["runId"] == run_id))


async def test_server_accept_twice_in_flight_sends_the_edit_once(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    async with (
        ScriptedModelServer(FIX_TURNS) as model,
        editor_session(ws, profile="neovim", env=model_env(model), settings=SETTINGS) as ed,
    ):
        ed.apply_mode = "hold"
        run_id = await _proposed(ed)
        first = await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
        second = await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
        third = await ed.command(
            protocol.CMD_REVIEW_ACCEPT, {"runId": run_id, "paths": ["calc.py"]}
        )
        assert (first["applying"], first["inFlight"]) == (["calc.py"], [])
        for again in (second, third):
            assert (again["applying"], again["inFlight"]) == ([], ["calc.py"])
        assert (await _summary(ed, run_id))["inFlight"] == ["calc.py"]
        with pytest.raises(JsonRpcException) as refused:  # no reject under an edit in flight
            await ed.command(protocol.CMD_REVIEW_REJECT, {"runId": run_id})
        assert refused.value.code == -32803 and "waiting for the editor" in refused.value.message
        await ed.wait_for(lambda: ed.held, what="the held applyEdit")
        assert len(ed.edits) == 1
        ed.held[0].set_result(ed._apply(ed.edits[0]))
        await wait_state(ed, run_id, "accepted")
        assert len(ed.edits) == 1
    assert (ws / "calc.py").read_text() == FIXED  # the closed file got the change once


async def test_server_accept_after_vscode_confirmed_the_automatic_edit_sends_nothing(
    tmp_path: Path,
) -> None:
    ws = _workspace(tmp_path)
    async with (
        ScriptedModelServer(FIX_TURNS) as model,
        editor_session(ws, profile="vscode", env=model_env(model), settings=SETTINGS) as ed,
    ):
        ed.apply_mode = "hold"  # the Refactor Preview is open with the automatic edit
        run_id = str((await ed.command(protocol.CMD_AGENT_START, {"task": "fix add"}))["runId"])
        await ed.wait_for(lambda: ed.held, what="the automatic applyEdit")
        answer = await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
        assert (answer["applying"], answer["inFlight"]) == ([], ["calc.py"])
        ed.held[0].set_result(ed._apply(ed.edits[0]))  # the user confirms the preview
        await wait_state(ed, run_id, "accepted")
        assert len(ed.edits) == 1
    assert (ws / "calc.py").read_text() == FIXED


async def test_server_accept_closed_file_written_before_the_answer_is_a_conflict(
    tmp_path: Path,
) -> None:
    ws = _workspace(tmp_path)
    async with (
        ScriptedModelServer(FIX_TURNS) as model,
        editor_session(ws, profile="neovim", env=model_env(model), settings=SETTINGS) as ed,
    ):
        ed.apply_mode = "hold"
        run_id = await _proposed(ed)
        await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
        await ed.wait_for(lambda: ed.held, what="the held applyEdit")
        # a racing writer (another tool, a git checkout) while the edit is in flight: the
        # edit now lands on the wrong lines, and the client still answers applied: true
        (ws / "calc.py").write_text("# written by someone else\n" + CALC)
        ed.held[0].set_result(ed._apply(ed.edits[0]))
        warning = await ed.wait_for(
            lambda: [m for m in ed.client.messages if m.type == lsp.MessageType.Warning],
            what="the conflict warning",
        )
        assert "calc.py" in warning[-1].message and "in flight" in warning[-1].message
        run = await _summary(ed, run_id)
        assert (run["state"], run["files"], run["conflicts"]) == (
            "proposed",
            ["calc.py"],
            ["calc.py"],
        )
        assert run["inFlight"] == []
        proposal = ed.last_proposal(run_id)
        assert proposal is not None and proposal["files"][0]["conflict"] is True


class _Writer(threading.Thread):
    """Rewrites a file with one of two headers (shifting every line) until stopped."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.stop = threading.Event()

    def run(self) -> None:
        variants = ["# one\n" + CALC, "# one\n# two\n" + CALC]
        i = 0
        while not self.stop.is_set():
            self.path.write_text(variants[i % 2])
            i += 1
            self.stop.wait(0.0005)

    def halt(self) -> None:
        self.stop.set()
        self.join()


async def test_server_accept_racing_writer_never_lands_on_the_wrong_lines(
    tmp_path: Path,
) -> None:
    ws = _workspace(tmp_path)
    trials = 6
    outcomes: list[str] = []
    async with (
        ScriptedModelServer(FIX_TURNS * trials) as model,
        editor_session(ws, profile="neovim", env=model_env(model), settings=SETTINGS) as ed,
    ):
        ed.apply_mode = "hold"
        for _ in range(trials):
            (ws / "calc.py").write_text(CALC)
            ed.held.clear()
            ed.edits.clear()
            run_id = await _proposed(ed)
            writer = _Writer(ws / "calc.py")
            writer.start()
            try:
                answer = await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
                if answer["applying"]:
                    await ed.wait_for(lambda: ed.held, what="the held applyEdit")
            finally:
                await asyncio.to_thread(writer.halt)
            base = (ws / "calc.py").read_text()
            if not answer["applying"]:
                assert "calc.py" in answer["conflicts"]
                outcomes.append("conflict before sending")
                await ed.command(protocol.CMD_REVIEW_REJECT, {"runId": run_id})
                continue
            ed.held[0].set_result(ed._apply(ed.edits[0]))
            async with asyncio.timeout(60):
                while (
                    await run_state(ed, run_id) == "proposed"
                    and "calc.py" not in (await _summary(ed, run_id))["conflicts"]
                ):
                    await asyncio.sleep(0.02)
            state = await run_state(ed, run_id)
            if state == "accepted":
                # applied on the text it was planned on: exactly the agent's line changed
                assert (ws / "calc.py").read_text() == base.replace("return a - b", "return a + b")
                outcomes.append("applied")
            else:
                assert state == "proposed"
                outcomes.append("conflict after the answer")
                await ed.command(protocol.CMD_REVIEW_REJECT, {"runId": run_id})
    assert len(outcomes) == trials


def test_server_accept_drift_check_accepts_what_clients_leave_on_disk(tmp_path: Path) -> None:
    from driveros.review import PlannedFile
    from driveros_lsp._edits import closed_file_drift

    def planned(
        action: str, path: str, source: str, current: str | None, target: str | None
    ) -> PlannedFile:
        return PlannedFile(path=path, action=action, source=source, current=current, target=target)

    closed = {
        "m.py": planned("modify", "m.py", "m.py", "old\n", "new\n"),
        "c.py": planned("create", "c.py", "c.py", None, "fresh\n"),
        "n.py": planned("rename", "n.py", "o.py", "same\n", "changed\n"),
        "d.py": planned("delete", "d.py", "d.py", "gone\n", None),
    }
    (tmp_path / "m.py").write_text("old\n")
    (tmp_path / "o.py").write_text("same\n")
    (tmp_path / "d.py").write_text("gone\n")
    assert closed_file_drift(tmp_path, closed, after=False) == {}
    # an editor that writes everything to disk
    (tmp_path / "m.py").write_text("new\n")
    (tmp_path / "c.py").write_text("fresh\n")
    (tmp_path / "o.py").rename(tmp_path / "n.py")
    (tmp_path / "n.py").write_text("changed\n")
    (tmp_path / "d.py").unlink()
    assert closed_file_drift(tmp_path, closed, after=True) == {}
    # an editor that keeps the new text in unsaved buffers (created file empty, renamed as is)
    (tmp_path / "m.py").write_text("old\n")
    (tmp_path / "c.py").write_text("")
    (tmp_path / "n.py").write_text("same\n")
    assert closed_file_drift(tmp_path, closed, after=True) == {}
    # a writer got in between
    (tmp_path / "m.py").write_text("someone else\nold\n")
    (tmp_path / "n.py").write_text("other\n")
    assert sorted(closed_file_drift(tmp_path, closed, after=True)) == ["m.py", "n.py"]
    before = closed_file_drift(tmp_path, closed, after=False)
    assert sorted(before) == ["c.py", "d.py", "m.py", "n.py"]
