"""End to end over stdio with the real agent and a scripted model on loopback:
code action -> command -> progress -> trace -> proposal -> applyEdit -> file contents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from driveros.testing import ToolCallSpec, Turn
from driveros_lsp import protocol
from tests.server._lsp import Editor, editor_session
from tests.server.conftest import model_env

SETTINGS = {"provider": "openai", "model": "scripted-model"}
ANSWER = "add() subtracted; it now adds."
FIX_TURNS = [
    Turn(
        tool_calls=[
            ToolCallSpec(
                "edit_file",
                {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
            )
        ]
    ),
    Turn(text=ANSWER),
]


def diagnostic(line: int = 1) -> lsp.Diagnostic:
    return lsp.Diagnostic(
        range=lsp.Range(
            start=lsp.Position(line=line, character=4), end=lsp.Position(line=line, character=16)
        ),
        message="add returns the difference",
        severity=lsp.DiagnosticSeverity.Error,
        source="pytest",
    )


async def run_state(ed: Editor, run_id: str) -> str:
    listing = await ed.command(protocol.CMD_AGENT_LIST)
    return str(next(r["state"] for r in listing["runs"] if r["runId"] == run_id))


async def wait_state(ed: Editor, run_id: str, *states: str) -> None:
    async def check() -> bool:
        return await run_state(ed, run_id) in states

    import asyncio

    async with asyncio.timeout(120):
        while not await check():
            await asyncio.sleep(0.05)


async def start_run(ed: Editor, task: str, *, until: str = "proposed", **arguments: Any) -> str:
    """Start ``task`` (more ``agent.start`` arguments in ``arguments``); its run id once the
    run is in state ``until``."""
    started = await ed.command(protocol.CMD_AGENT_START, {"task": task, **arguments})
    run_id = str(started["runId"])
    await wait_state(ed, run_id, until)
    return run_id


async def restored_note(ed: Editor) -> list[lsp.ShowMessageParams]:
    """The message a new server shows once it has reopened kept proposals."""
    notes: list[lsp.ShowMessageParams] = await ed.wait_for(
        lambda: [m for m in ed.client.messages if "waiting for review" in m.message],
        what="the restored-proposals message",
    )
    return notes


async def test_flow_vscode_fix_is_an_annotated_edit_applied_to_the_buffer(
    workspace: Path, scripted_model
) -> None:
    async with (
        scripted_model(FIX_TURNS) as model,
        editor_session(workspace, profile="vscode", env=model_env(model), settings=SETTINGS) as ed,
    ):
        uri = ed.open("calc.py")
        actions = await ed.code_actions("calc.py", [diagnostic()])
        assert [a.title for a in actions] == [
            protocol.ACTION_FIX_PREFIX + "add returns the difference",
            protocol.ACTION_FIX_ALL,
        ]
        assert await ed.code_actions("calc.py", [diagnostic()], only=["source"]) == []
        assert len(await ed.code_actions("calc.py", [diagnostic()], only=["quickfix"])) == 2
        assert model.requests == []  # code actions never call the model
        fix = actions[0]
        assert fix.kind == lsp.CodeActionKind.QuickFix
        assert list(fix.tags or []) == [lsp.CodeActionTag.LlmGenerated]
        assert fix.command is not None and fix.command.command == protocol.CMD_AGENT_FIX
        started = await ed.command(fix.command.command, *(fix.command.arguments or []))
        run_id = started["runId"]
        await wait_state(ed, run_id, "accepted")

        # the edit: versioned for the open buffer, every change annotated, map complete
        assert len(ed.edits) == 1
        edit = ed.edits[0].edit
        assert edit.change_annotations == {
            "driveros:calc.py": lsp.ChangeAnnotation(
                label="driveros: modify calc.py", needs_confirmation=True, description=ANSWER
            )
        }
        (doc_edit,) = edit.document_changes or []
        assert isinstance(doc_edit, lsp.TextDocumentEdit)
        assert doc_edit.text_document == lsp.OptionalVersionedTextDocumentIdentifier(
            uri=uri, version=1
        )
        assert [e.annotation_id for e in doc_edit.edits] == ["driveros:calc.py"]
        assert ed.text("calc.py").splitlines()[1] == "    return a + b"
        assert "return a - b" in (workspace / "calc.py").read_text()  # the buffer, not disk

        # progress: begin without percentage, reports name turn and tool, end has the outcome
        await ed.wait_for(lambda: ed.progress_ended(run_id), what="the progress end")
        progress = ed.progress(run_id)
        assert isinstance(progress[0], lsp.WorkDoneProgressBegin)
        assert progress[0].percentage is None and progress[0].cancellable
        reports = [p.message for p in progress if isinstance(p, lsp.WorkDoneProgressReport)]
        assert "turn 1" in reports
        assert any(str(m).startswith("turn 1: edit_file") for m in reports)
        assert isinstance(progress[-1], lsp.WorkDoneProgressEnd)
        assert progress[-1].message == "answered; 1 file proposed"

        # trace: the event schema, in order, deltas merged
        kinds = [e["type"] for e in ed.events(run_id)]
        assert kinds[0] == "run_started" and kinds[-1] == "result"
        assert {"tool_call", "tool_result", "edit"} <= set(kinds)
        assert "proposal" not in kinds  # sent once, as driveros/proposal (below)
        texts = ed.events(run_id, "text")
        assert "".join(t["text"] for t in texts) == ANSWER
        assert len(texts) < len(ANSWER) / 7  # streamed in 7-char fragments, merged
        seqs = [e["seq"] for e in ed.events(run_id)]
        assert seqs == sorted(seqs)

        # proposal notifications: pending, then settled
        first, last = ed.proposals[0], ed.proposals[-1]
        assert first["runId"] == run_id and first["state"] == "proposed"
        assert [f["path"] for f in first["files"]] == ["calc.py"]
        assert "+    return a + b" in first["files"][0]["diff"]
        assert last["state"] == "accepted" and last["files"] == []
        assert await ed.code_actions("calc.py") == []


NOTES = "héllo wörld 😀 tail"  # no final newline: the edit ends mid-line


async def test_flow_neovim_reviews_by_command_in_utf8(workspace: Path, scripted_model) -> None:
    (workspace / "notes.txt").write_text(NOTES)
    turns = [
        Turn(
            tool_calls=[
                ToolCallSpec(
                    "edit_file", {"path": "notes.txt", "old_string": "tail", "new_string": "end"}
                ),
                ToolCallSpec("write_file", {"path": "pkg/new.py", "content": "X = 1\n"}),
            ]
        ),
        Turn(text="done"),
    ]
    async with (
        scripted_model(turns) as model,
        editor_session(workspace, profile="neovim", env=model_env(model), settings=SETTINGS) as ed,
    ):
        assert ed.encoding == "utf-8"
        ed.open("notes.txt")
        started = await ed.command(protocol.CMD_AGENT_START, {"task": "tidy up"})
        run_id = started["runId"]
        await wait_state(ed, run_id, "proposed")
        assert ed.edits == []  # no annotation support: nothing is sent unasked
        proposal = ed.last_proposal(run_id)
        assert proposal is not None
        assert sorted((f["path"], f["action"]) for f in proposal["files"]) == [
            ("notes.txt", "modify"),
            ("pkg/new.py", "create"),
        ]
        titles = [a.title for a in await ed.code_actions("notes.txt")]
        assert titles == [
            protocol.ACTION_ACCEPT,
            protocol.ACTION_REJECT,
            f"{protocol.ACTION_ACCEPT}: notes.txt",
            f"{protocol.ACTION_REJECT}: notes.txt",
        ]

        answer = await ed.command(
            protocol.CMD_REVIEW_ACCEPT, {"runId": run_id, "paths": ["notes.txt"]}
        )
        assert answer == {
            "runId": run_id,
            "applying": ["notes.txt"],
            "inFlight": [],
            "conflicts": {},
        }
        await ed.wait_for(lambda: ed.text("notes.txt") == "héllo wörld 😀 end", what="utf-8 edit")
        edit = ed.edits[0].edit
        assert edit.change_annotations is None
        (doc_edit,) = edit.document_changes or []
        assert isinstance(doc_edit, lsp.TextDocumentEdit)
        assert all(isinstance(e, lsp.TextEdit) for e in doc_edit.edits)
        end = doc_edit.edits[0].range.end
        assert (end.line, end.character) == (0, len(NOTES.encode("utf-8")))

        await ed.command(protocol.CMD_REVIEW_ACCEPT, {"runId": run_id})
        await wait_state(ed, run_id, "accepted")
        assert (workspace / "pkg" / "new.py").read_text() == "X = 1\n"
        kinds = [type(c).__name__ for c in ed.edits[1].edit.document_changes or []]
        assert kinds == ["CreateFile", "TextDocumentEdit"]


async def test_flow_reject_with_feedback_resumes_the_run(workspace: Path, scripted_model) -> None:
    turns = [
        *FIX_TURNS,
        Turn(
            tool_calls=[
                ToolCallSpec(
                    "edit_file",
                    {"path": "calc.py", "old_string": "x * 2", "new_string": "x + x"},
                )
            ]
        ),
        Turn(text="also changed double"),
    ]
    async with (
        scripted_model(turns) as model,
        editor_session(workspace, profile="neovim", env=model_env(model), settings=SETTINGS) as ed,
    ):
        ed.open("calc.py")
        selection = {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}
        run_id = (
            await ed.command(
                protocol.CMD_AGENT_START,
                {"task": "fix add", "uri": ed.uri("calc.py"), "range": selection},
            )
        )["runId"]
        await wait_state(ed, run_id, "proposed")
        first_user = model.requests[0]["messages"][1]["content"]
        assert first_user.startswith("fix add\n\nThe user is looking at calc.py.")
        assert "lines 1-2:\n```\ndef add(a, b):\n    return a - b\n```" in first_user
        answer = await ed.command(
            protocol.CMD_REVIEW_REJECT, {"runId": run_id, "feedback": "double too, please"}
        )
        assert answer == {"runId": run_id, "state": "running"}
        await wait_state(ed, run_id, "proposed")
        proposal = ed.last_proposal(run_id)
        assert proposal is not None and proposal["rationale"] == "also changed double"
        diff = proposal["files"][0]["diff"]
        assert "+    return a + b" in diff and "+    return x + x" in diff
        # the resumed run sent the whole conversation plus the feedback as the last user turn
        messages = model.requests[-2]["messages"]
        assert messages[-1] == {"role": "user", "content": "double too, please"}
        assert any("return a + b" in str(m) for m in messages[:-1])
        await ed.command(protocol.CMD_REVIEW_REJECT, {"runId": run_id})
        assert await run_state(ed, run_id) == "rejected"
        assert (workspace / "calc.py").read_text().count("return a - b") == 1


async def test_flow_council_verdict_rides_on_the_proposal(workspace: Path, scripted_model) -> None:
    critic = Turn(text='{"summary": "looks right", "issues": []}')
    referee = Turn(text='{"verdict": "approve", "summary": "adds now", "issues": []}')
    async with (
        scripted_model([*FIX_TURNS, critic, referee]) as model,
        editor_session(
            workspace,
            profile="neovim",
            env=model_env(model),
            settings={**SETTINGS, "council": True},
        ) as ed,
    ):
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "fix add"}))["runId"]
        await wait_state(ed, run_id, "proposed")
        proposal = ed.last_proposal(run_id)
        assert proposal is not None
        council = proposal["council"]
        assert council["referee"].startswith("openai")  # the provider's own default model
        assert {k: council[k] for k in ("verdict", "summary", "issues")} == {
            "verdict": "approve",
            "summary": "adds now",
            "issues": [],
        }
        assert "return a + b" in model.requests[2]["messages"][-1]["content"]  # the critic saw it
