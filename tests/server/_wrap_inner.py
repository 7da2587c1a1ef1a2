"""A real (pygls) language server to wrap in the --wrap tests: it publishes a diagnostic per
line holding ``BAD``, has its own code actions and commands, asks the client a question, and
can crash on request.

    python tests/server/_wrap_inner.py [--encoding utf-8|utf-16|utf-32]
"""

from __future__ import annotations

import os
import sys
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

server = LanguageServer("wrap-inner", "1.0")


def _publish(uri: str, text: str) -> None:
    diags = [
        lsp.Diagnostic(
            range=lsp.Range(
                start=lsp.Position(line=n, character=line.index("BAD")),
                end=lsp.Position(line=n, character=line.index("BAD") + 3),
            ),
            message="inner: BAD here",
            source="inner",
            severity=lsp.DiagnosticSeverity.Error,
        )
        for n, line in enumerate(text.splitlines())
        if "BAD" in line
    ]
    server.text_document_publish_diagnostics(
        lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diags)
    )


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def did_open(params: lsp.DidOpenTextDocumentParams) -> None:
    _publish(params.text_document.uri, params.text_document.text)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def did_change(params: lsp.DidChangeTextDocumentParams) -> None:
    doc = server.workspace.get_text_document(params.text_document.uri)
    _publish(doc.uri, doc.source)


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
def hover(params: lsp.HoverParams) -> lsp.Hover:
    return lsp.Hover(contents=f"inner hover at {params.position.line}:{params.position.character}")


@server.feature(
    lsp.TEXT_DOCUMENT_CODE_ACTION,
    lsp.CodeActionOptions(
        code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.Refactor]
    ),
)
def code_action(params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    out = [
        lsp.CodeAction(title=f"Inner fix: {d.message}", kind=lsp.CodeActionKind.QuickFix)
        for d in params.context.diagnostics
    ]
    out.append(lsp.CodeAction(title="Inner refactor", kind=lsp.CodeActionKind.Refactor))
    return out


@server.command("inner.echo")
def echo(*args: Any) -> Any:
    return {"echo": list(args)}


@server.command("inner.crash")
def crash(*args: Any) -> None:
    sys.stderr.write("inner: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.command("inner.ask")
async def ask(*args: Any) -> Any:
    answer = await server.window_show_message_request_async(
        lsp.ShowMessageRequestParams(
            type=lsp.MessageType.Info,
            message="inner asks",
            actions=[lsp.MessageActionItem(title="Yes"), lsp.MessageActionItem(title="No")],
        )
    )
    return {"answer": answer.title if answer is not None else None}


if __name__ == "__main__":
    server.start_io()
