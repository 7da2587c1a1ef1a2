"""An accept is one pass with one owner (driveros_lsp._acceptance.Acceptance): it reserves,
plans, records, sends through the hub and settles; the hub only sends the edit and hands back
the answer, and the run manager keeps no accept bookkeeping of its own."""

from __future__ import annotations

import ast
from pathlib import Path

import driveros_lsp
from driveros.testing import ToolCallSpec, Turn
from driveros_lsp import protocol
from driveros_lsp._runs import RunManager
from tests.server._lsp import editor_session
from tests.server.conftest import model_env
from tests.server.test_flow import SETTINGS, start_run, wait_state

PACKAGE = Path(driveros_lsp.__file__).parent
#: What computing an accept takes: the planner, the disk checks, the rebase.
PLAN_INTERNALS = {"plan_edit", "closed_file_drift", "rebase_text", "_rebase"}
#: The accept bookkeeping the manager used to be asked for, hop by hop.
REVIEW_HOPS = {"reserve", "unreserve", "planned", "drifted", "settle"}


def _imported_names(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names |= {a.name for a in node.names}
    return names


def _called_attributes(tree: ast.AST) -> set[str]:
    return {
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }


def test_accept_the_hub_neither_plans_nor_settles() -> None:
    hub = ast.parse((PACKAGE / "_hub.py").read_text(encoding="utf-8"))
    assert _imported_names(hub) & PLAN_INTERNALS == set()
    assert _called_attributes(hub) & (PLAN_INTERNALS | REVIEW_HOPS) == set()
    assert "Acceptance" in _imported_names(hub)  # it hands the accept to the pass


def test_accept_the_run_manager_has_no_accept_hops() -> None:
    assert {name for name in REVIEW_HOPS if hasattr(RunManager, name)} == set()


def test_accept_the_pass_owns_plan_edit_and_settle() -> None:
    tree = ast.parse((PACKAGE / "_acceptance.py").read_text(encoding="utf-8"))
    assert {"plan_edit", "closed_file_drift"} <= _imported_names(tree)
    assert {"send_edit", "release", "keep", "proposal_changed"} <= _called_attributes(tree)


TWO_FILES = [
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "one.txt", "content": "one\n"})]),
    Turn(tool_calls=[ToolCallSpec("write_file", {"path": "two.txt", "content": "two\n"})]),
    Turn(text="Two files."),
]


async def test_accept_sends_one_edit_and_settles_once_it_is_answered(
    workspace: Path, scripted_model
) -> None:
    async with (
        scripted_model(TWO_FILES) as model,
        editor_session(workspace, profile="neovim", env=model_env(model), settings=SETTINGS) as ed,
    ):
        run_id = await start_run(ed, "two files")
        ed.apply_mode = "hold"  # the editor asks its user: the answer comes later
        first = await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
        assert sorted(first["applying"]) == ["one.txt", "two.txt"]
        assert len(ed.edits) == 1 and len(ed.held) == 1
        # asked again while the answer is awaited: nothing is sent twice
        again = await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
        assert (again["applying"], sorted(again["inFlight"])) == ([], ["one.txt", "two.txt"])
        proposals = len(ed.proposals)
        listing = await ed.command(protocol.CMD_AGENT_LIST)
        assert [r["state"] for r in listing["runs"]] == ["proposed"]  # not settled before
        ed.held[0].set_result(ed._apply(ed.edits[0]))
        await wait_state(ed, run_id, "accepted")
        await ed.wait_for(lambda: len(ed.proposals) > proposals, what="the settled proposal")
        settled = ed.last_proposal(run_id)
        assert settled is not None and (settled["state"], settled["files"]) == ("accepted", [])
        assert len(ed.edits) == 1
    assert (workspace / "one.txt").read_text() == "one\n"
    assert (workspace / "two.txt").read_text() == "two\n"
