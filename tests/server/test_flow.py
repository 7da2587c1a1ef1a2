"""End to end over stdio: code action -> command -> progress -> trace -> proposal -> edit."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp

from driveros.testing import ToolCallSpec, Turn
from driveros_lsp import protocol
from tests.server._lsp import editor_session

SETTINGS = {"provider": "openai", "model": "scripted-model"}

FIX_TURNS = [
    Turn(
        tool_calls=[
            ToolCallSpec(
                "edit_file",
                {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"},
            )
        ]
    ),
    Turn(text="add() subtracted; it now adds."),
]


def _diag() -> lsp.Diagnostic:
    return lsp.Diagnostic(
        range=lsp.Range(
            start=lsp.Position(line=1, character=4), end=lsp.Position(line=1, character=16)
        ),
        message="add returns the difference",
        severity=lsp.DiagnosticSeverity.Error,
        source="pytest",
    )


async def test_flow_vscode_annotated_edit_lands_in_buffer(workspace: Path, scripted_model) -> None:
    async with (
        scripted_model(FIX_TURNS) as env,
        editor_session(workspace, profile="vscode", env=env, settings=SETTINGS) as ed,
    ):
        ed.open("calc.py")
        actions = await ed.code_actions("calc.py", [_diag()])
        fix = actions[0]
        assert fix.title == protocol.ACTION_FIX_PREFIX + "add returns the difference"
        assert fix.kind == lsp.CodeActionKind.QuickFix
        assert list(fix.tags or []) == [lsp.CodeActionTag.LlmGenerated]
        assert fix.command is not None
        started = await ed.command(fix.command.command, *fix.command.arguments)
        run_id = started["runId"]
        await ed.wait_for(lambda: ed.edits, what="an applyEdit request")
        edit = ed.edits[0].edit
        assert edit.change_annotations is not None
        await ed.wait_for(
            lambda: ed.text("calc.py").count("return a + b"), what="the fix in the buffer"
        )
        print(ed.events(run_id))
        print(ed.progress(run_id))
