"""The proposal as a WorkspaceEdit: every file action, annotations, stale documents, conflicts;
and every command's bad params."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from driveros.review import ScratchWorkspace, rebase_text
from driveros.testing import ToolCallSpec, Turn
from driveros_lsp import protocol
from driveros_lsp._edits import OpenDocument, plan_edit
from tests.server._lsp import apply_text_edits, editor_session, uri_path
from tests.server.conftest import model_env
from tests.server.test_flow import FIX_TURNS, SETTINGS, wait_state


def _apply_to_disk(edit: lsp.WorkspaceEdit, encoding: str) -> None:
    for change in edit.document_changes or []:
        if isinstance(change, lsp.TextDocumentEdit):
            path = uri_path(change.text_document.uri)
            path.write_text(apply_text_edits(path.read_text(), list(change.edits), encoding))
        elif isinstance(change, lsp.CreateFile):
            uri_path(change.uri).parent.mkdir(parents=True, exist_ok=True)
            uri_path(change.uri).touch()
        elif isinstance(change, lsp.RenameFile):
            uri_path(change.old_uri).rename(uri_path(change.new_uri))
        elif isinstance(change, lsp.DeleteFile):
            uri_path(change.uri).unlink()


def _annotation_ids(edit: lsp.WorkspaceEdit) -> set[str]:
    ids: set[str] = set()
    for change in edit.document_changes or []:
        if isinstance(change, lsp.TextDocumentEdit):
            ids |= {e.annotation_id for e in change.edits if isinstance(e, lsp.AnnotatedTextEdit)}
            assert all(isinstance(e, lsp.AnnotatedTextEdit) for e in change.edits)
        else:
            assert change.annotation_id is not None
            ids.add(change.annotation_id)
    return ids


@pytest.mark.parametrize("git", [False, True], ids=["copy", "worktree"])
async def test_review_every_file_action_round_trips(tmp_path: Path, git: bool) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for name, text in {"a.txt": "a\n", "b.txt": "b1\nb2\n", "c.txt": "c1\nc2\nc3\n"}.items():
        (ws / name).write_text(text)
    if git:
        for cmd in (
            ["init", "-q"],
            ["add", "."],
            ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"],
        ):
            subprocess.run(["git", "-C", str(ws), *cmd], check=True)
    async with await ScratchWorkspace.create(ws) as scratch:
        (scratch.path / "a.txt").unlink()
        (scratch.path / "b.txt").rename(scratch.path / "moved.txt")
        (scratch.path / "c.txt").write_text("c1\nC2\nc3\nc4\n")
        (scratch.path / "new").mkdir()
        (scratch.path / "new" / "n.txt").write_text("fresh\n")
        changes = await scratch.changes()
        expected = {p.name: p.read_text() for p in scratch.path.rglob("*.txt")}
    plan = plan_edit(
        changes,
        root=ws,
        paths=None,
        documents={},
        encoding="utf-16",
        annotate=True,
        rationale="why",
        rebase=rebase_text,
    )
    assert plan.conflicts == {}
    assert plan.edit is not None
    annotations = plan.edit.change_annotations or {}
    assert set(annotations) == _annotation_ids(plan.edit) == {f"driveros:{c.path}" for c in changes}
    assert all(a.needs_confirmation and a.description == "why" for a in annotations.values())
    _apply_to_disk(plan.edit, "utf-16")
    assert {p.name: p.read_text() for p in ws.rglob("*.txt")} == expected


def test_review_open_document_edited_meanwhile_is_rebased_or_kept(tmp_path: Path) -> None:
    class Change:
        path, action, old_path, binary, diff = "m.py", "modify", None, False, ""
        before = "one\ntwo\nthree\nfour\nfive\n"
        after = "one\nTWO\nthree\nfour\nfive\n"

    uri = (tmp_path / "m.py").as_uri()

    def plan(buffer: str) -> Any:
        docs = {uri: OpenDocument(uri=uri, version=7, text=buffer)}
        return plan_edit(
            [Change()],
            root=tmp_path,
            paths=None,
            documents=docs,
            encoding="utf-8",
            annotate=False,
            rationale="",
            rebase=rebase_text,
        )

    rebased = plan("one\ntwo\nthree\nfour\nFIVE\n")
    assert rebased.conflicts == {}
    (doc_edit,) = rebased.edit.document_changes
    assert doc_edit.text_document.version == 7
    merged = apply_text_edits("one\ntwo\nthree\nfour\nFIVE\n", list(doc_edit.edits), "utf-8")
    assert merged == "one\nTWO\nthree\nfour\nFIVE\n"

    clash = plan("one\ntwo (mine)\nthree\nfour\nfive\n")
    assert clash.edit is None and clash.included == []
    assert "edited since the run started" in clash.conflicts["m.py"]


async def test_review_stale_buffer_conflict_keeps_the_proposal(
    workspace: Path, scripted_model
) -> None:
    async with (
        scripted_model(FIX_TURNS) as model,
        editor_session(workspace, profile="neovim", env=model_env(model), settings=SETTINGS) as ed,
    ):
        ed.open("calc.py")
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "fix add"}))["runId"]
        await wait_state(ed, run_id, "proposed")
        mine = ed.text("calc.py").replace("return a - b", "return b - a  # mine")
        ed.type_text("calc.py", mine)
        answer = await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
        assert answer["applying"] == [] and list(answer["conflicts"]) == ["calc.py"]
        assert ed.edits == []
        assert ed.text("calc.py") == mine
        warning = await ed.wait_for(lambda: ed.client.messages, what="a conflict warning")
        assert warning[-1].type == lsp.MessageType.Warning and "calc.py" in warning[-1].message
        listing = await ed.command(protocol.CMD_AGENT_LIST)
        (run,) = listing["runs"]
        assert (run["state"], run["files"], run["conflicts"]) == (
            "proposed",
            ["calc.py"],
            ["calc.py"],
        )
        assert ed.last_proposal(run_id)["files"][0]["conflict"] is True

        # the user edits elsewhere instead: the agent's hunk is rebased onto the buffer
        ed.type_text(
            "calc.py",
            ed.text("calc.py")
            .replace("  # mine", "")
            .replace("return b - a", "return a - b")
            .replace("x * 2", "2 * x"),
        )
        answer = await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
        assert answer["applying"] == ["calc.py"]
        await wait_state(ed, run_id, "accepted")
        assert "return a + b" in ed.text("calc.py") and "return 2 * x" in ed.text("calc.py")


async def test_review_run_diagnostics_are_published_then_cleared(
    workspace: Path, scripted_model
) -> None:
    turns = [
        Turn(
            tool_calls=[ToolCallSpec("write_file", {"path": "broken.py", "content": "def f(:\n"})]
        ),
        Turn(text="wrote it"),
    ]
    async with (
        scripted_model(turns) as model,
        editor_session(workspace, profile="neovim", env=model_env(model), settings=SETTINGS) as ed,
    ):
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "break"}))["runId"]
        await wait_state(ed, run_id, "proposed")
        uri = ed.uri("broken.py")
        mine = [p for p in ed.published if p.uri == uri]
        assert mine and mine[0].diagnostics and list(mine[-1].diagnostics) == []
        first = mine[0].diagnostics[0]
        assert first.source == protocol.DIAGNOSTIC_SOURCE
        assert first.data == {"runId": run_id}
        assert first.range.start.line == 0


BAD_PARAMS: list[tuple[str, list[Any], str]] = [
    (protocol.CMD_AGENT_START, [], "exactly one object"),
    (protocol.CMD_AGENT_START, [{}], "task"),
    (protocol.CMD_AGENT_START, [{"task": ""}], "task"),
    (protocol.CMD_AGENT_START, [{"task": "x", "bogus": 1}], "bogus"),
    (protocol.CMD_AGENT_START, [{"task": "x", "uri": "file:///elsewhere/x.py"}], "not inside"),
    (protocol.CMD_AGENT_START, ["just a string"], "exactly one object"),
    (protocol.CMD_AGENT_FIX, [{"diagnostics": []}], "uri"),
    (protocol.CMD_AGENT_FIX, [{"uri": "WS/calc.py"}], "at least one diagnostic"),
    (protocol.CMD_AGENT_FIX, [{"uri": "WS/calc.py", "diagnostics": [{"message": "m"}]}], "range"),
    (protocol.CMD_AGENT_CANCEL, [{}], "runId"),
    (protocol.CMD_AGENT_CANCEL, [{"runId": "nope"}], "unknown run"),
    (protocol.CMD_AGENT_LIST, [{"x": 1}], "x"),
    (protocol.CMD_REVIEW_ACCEPT, [{"runId": "nope"}], "unknown run"),
    (protocol.CMD_REVIEW_ACCEPT, [{"runId": "r", "paths": "calc.py"}], "paths"),
    (protocol.CMD_REVIEW_REJECT, [{"feedback": "no"}], "runId"),
    (protocol.CMD_REVIEW_REJECT, [{"runId": "nope"}], "unknown run"),
    (protocol.CMD_AGENT_FOLLOW_UP, [{"runId": "nope", "task": "more"}], "unknown run"),
    (protocol.CMD_AGENT_FOLLOW_UP, [{"runId": "r"}], "task"),
    (protocol.CMD_AGENT_ACCEPT, [{"runId": "nope"}], "unknown run"),
    (protocol.CMD_AGENT_ACCEPT, [{"runId": "r", "through": -1}], "through"),
    (protocol.CMD_AGENT_REVERT, [{"runId": "r"}], "to"),
    (protocol.CMD_AGENT_REVERT, [{"runId": "nope", "to": 1}], "unknown run"),
    (protocol.CMD_AGENT_COMMAND, [{"name": ""}], "name"),
    (protocol.CMD_AGENT_COMMAND, [{"name": "x", "bogus": 1}], "bogus"),
    (protocol.CMD_INLINE_ACCEPTED, [{}], "model"),
    (protocol.CMD_INLINE_ACCEPTED, [{"model": "m", "chars": -1}], "chars"),
    (protocol.CMD_MEMORY_RECALL, [{}], "query"),
    (protocol.CMD_MEMORY_FORGET, [{"id": 0}], "id"),
    (protocol.CMD_MEMORY_FORGET, [{"id": 424242}], "424242"),
]


async def test_review_bad_params_to_every_command_are_errors(workspace: Path) -> None:
    async with editor_session(workspace) as ed:
        registered = ed.initialize_result.capabilities.execute_command_provider.commands  # type: ignore[attr-defined]
        assert sorted(registered) == sorted(protocol.COMMANDS)
        assert {c for c, _, _ in BAD_PARAMS} == set(protocol.COMMANDS)
        for command, args, needle in BAD_PARAMS:
            args = [
                {k: v.replace("WS/", ed.uri("")) if isinstance(v, str) else v for k, v in a.items()}
                if isinstance(a, dict)
                else a
                for a in args
            ]
            with pytest.raises(JsonRpcException) as err:
                await ed.command(command, *args)
            assert err.value.code == -32602, (command, args, err.value.message)
            assert command in err.value.message or needle in err.value.message
            assert needle in err.value.message, (command, err.value.message)


async def test_review_vscode_pending_apply_never_blocks_the_server(
    workspace: Path, scripted_model
) -> None:
    async with (
        scripted_model(FIX_TURNS) as model,
        editor_session(workspace, profile="vscode", env=model_env(model), settings=SETTINGS) as ed,
    ):
        ed.apply_mode = "hold"  # like VS Code's Refactor Preview waiting for the user
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "fix add"}))["runId"]
        await ed.wait_for(lambda: ed.held, what="a pending applyEdit")
        listing = await ed.command(protocol.CMD_AGENT_LIST)
        assert listing["runs"][0]["state"] == "proposed"
        assert [a.title for a in await ed.code_actions("calc.py")] == [
            protocol.ACTION_ACCEPT,
            protocol.ACTION_REJECT,
        ]
        ed.held[0].set_result(ed._apply(ed.edits[0]))  # the user confirms
        await wait_state(ed, run_id, "accepted")
        assert "return a + b" in (workspace / "calc.py").read_text()


async def test_review_memory_recall_and_forget(workspace: Path) -> None:
    from driveros.config import load_environment
    from driveros.memory import Provenance, open_memory_store

    store = await open_memory_store(workspace, load_environment(cwd=workspace, environ={}))
    async with store:
        await store.apply(
            adds=["calc.add must return the sum of its arguments"],
            provenance=Provenance(source="manual", task="seed"),
        )
    async with editor_session(workspace) as ed:
        found = await ed.command(protocol.CMD_MEMORY_RECALL, {"query": "calc add sum"})
        (fact,) = found["facts"]
        assert fact["text"] == "calc.add must return the sum of its arguments"
        assert fact["status"] == "active"
        gone = await ed.command(protocol.CMD_MEMORY_FORGET, {"id": fact["id"], "why": "stale"})
        assert gone["fact"]["id"] == fact["id"] and gone["fact"]["status"] != "active"
        assert (await ed.command(protocol.CMD_MEMORY_RECALL, {"query": "calc add sum"}))[
            "facts"
        ] == []


def test_review_binary_and_oversized_changes_are_reported_not_sent(tmp_path: Path) -> None:
    class Binary:
        path, action, old_path, binary, diff = "logo.png", "modify", None, True, ""
        before = after = None

    class Huge:
        path, action, old_path, binary, diff = "big.txt", "modify", None, False, ""
        before = after = None

    plan = plan_edit(
        [Binary(), Huge()],
        root=tmp_path,
        paths=None,
        documents={},
        encoding="utf-16",
        annotate=True,
        rationale="",
        rebase=rebase_text,
    )
    assert plan.edit is None and plan.included == []
    assert sorted(plan.conflicts) == ["big.txt", "logo.png"]
