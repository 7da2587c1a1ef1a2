"""textDocument/codeAction: cheap and local (never calls a model, never touches disk).

Offers "Ask agent to fix: <message>" per diagnostic in the context, "Ask agent to fix all in
file", and for a document in a pending proposal "Accept/Reject agent proposal" (the whole run,
and per file when the run changed several files).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from driveros_lsp.features.documents import relative_path
from driveros_lsp.protocol import (
    ACTION_ACCEPT,
    ACTION_FIX_ALL,
    ACTION_FIX_PREFIX,
    ACTION_REJECT,
    CMD_AGENT_FIX,
    CMD_REVIEW_ACCEPT,
    CMD_REVIEW_REJECT,
)

if TYPE_CHECKING:
    from driveros_lsp._runs import Run
    from driveros_lsp._server import DriverosLanguageServer

_TAGS = [lsp.CodeActionTag.LlmGenerated]
_MESSAGE_LIMIT = 80


def _short(message: str) -> str:
    line = message.strip().splitlines()[0] if message.strip() else "problem"
    return line if len(line) <= _MESSAGE_LIMIT else line[: _MESSAGE_LIMIT - 1] + "…"


def _fix_action(title: str, uri: str, diags: list[Any], everything: bool) -> lsp.CodeAction:
    args: dict[str, Any] = {"uri": uri, "diagnostics": diags}
    if everything:
        args["all"] = True
    return lsp.CodeAction(
        title=title,
        kind=lsp.CodeActionKind.QuickFix,
        command=lsp.Command(title=title, command=CMD_AGENT_FIX, arguments=[args]),
        tags=_TAGS,
    )


def _review_action(title: str, command: str, run: Run, paths: list[str] | None) -> lsp.CodeAction:
    args: dict[str, Any] = {"runId": run.run_id}
    if paths is not None:
        args["paths"] = paths
    return lsp.CodeAction(
        title=title,
        kind=lsp.CodeActionKind.QuickFix,
        command=lsp.Command(title=title, command=command, arguments=[args]),
        tags=_TAGS,
    )


def actions_for(
    server: DriverosLanguageServer, params: lsp.CodeActionParams
) -> list[lsp.CodeAction]:
    uri = params.text_document.uri
    only = params.context.only
    wanted = [k.value if isinstance(k, lsp.CodeActionKind) else str(k) for k in only or ()]
    if wanted and not any(lsp.CodeActionKind.QuickFix.value.startswith(k) for k in wanted):
        return []
    converter = server.protocol._converter
    out: list[lsp.CodeAction] = []
    context_diags = list(params.context.diagnostics)
    for diag in context_diags:
        action = _fix_action(
            ACTION_FIX_PREFIX + _short(diag.message), uri, [converter.unstructure(diag)], False
        )
        action.diagnostics = [diag]
        out.append(action)
    if context_diags:
        out.append(
            _fix_action(
                ACTION_FIX_ALL, uri, [converter.unstructure(d) for d in context_diags], True
            )
        )
    out.extend(_review_actions(server, uri))
    return out


def _review_actions(server: DriverosLanguageServer, uri: str) -> list[lsp.CodeAction]:
    try:
        root = server.folder_of(uri)
    except LookupError:
        return []
    if relative_path(root, uri) is None:
        return []

    def rel_in(run: Run) -> str | None:  # each run proposes in its own folder
        return relative_path(Path(run.request.workspace) if run.request.workspace else root, uri)

    runs = [r for r in server.runs.runs() if r.state == "proposed" and rel_in(r) in r.pending]
    out: list[lsp.CodeAction] = []
    for run in runs:
        rel = rel_in(run)
        if rel is None:
            continue
        suffix = f" (run {run.run_id})" if len(runs) > 1 else ""
        out.append(_review_action(ACTION_ACCEPT + suffix, CMD_REVIEW_ACCEPT, run, None))
        out.append(_review_action(ACTION_REJECT + suffix, CMD_REVIEW_REJECT, run, None))
        if len(run.pending) > 1:
            out.append(
                _review_action(f"{ACTION_ACCEPT}: {rel}{suffix}", CMD_REVIEW_ACCEPT, run, [rel])
            )
            out.append(
                _review_action(f"{ACTION_REJECT}: {rel}{suffix}", CMD_REVIEW_REJECT, run, [rel])
            )
    return out


def setup(server: DriverosLanguageServer) -> None:
    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]),
    )
    def code_action(params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        return actions_for(server, params)
