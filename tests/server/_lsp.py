"""A test editor for driveros-lsp: a pytest-lsp client that behaves like a real one.

It records ``driveros/trace``, ``driveros/proposal`` and ``$/progress``, answers
``workspace/applyEdit`` by applying the edit the way an editor does (open buffers in memory
with version checks, other files on disk), and works around lsprotocol's codeAction structuring
trap (a ``Command | CodeAction`` item is read as a CodeAction unless ``command`` is a string).

Every ``driveros/trace`` and ``driveros/proposal`` it receives and every command result is
checked against the checked-in payload schema (editors/protocol.schema.json): a session that
got a payload the schema does not describe fails when it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlparse

from jsonschema import Draft202012Validator
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import make_test_lsp_client

from driveros_lsp import protocol

ApplyMode = Literal["apply", "refuse", "hold"]
PROFILES = {"vscode": "visual-studio-code@v1.65.2", "neovim": "neovim@v0.11.0"}
PAYLOAD_SCHEMA = Path(__file__).resolve().parents[2] / "editors" / "protocol.schema.json"


@functools.cache
def _payload_validator(kind: str, name: str) -> Draft202012Validator:
    schema = json.loads(PAYLOAD_SCHEMA.read_text(encoding="utf-8"))
    return Draft202012Validator({"$defs": schema["$defs"], **schema[kind][name]})


def wire_problems(kind: Literal["notifications", "commands"], name: str, payload: Any) -> list[str]:
    """What is wrong with ``payload`` (a notification's params or a command's result) by the
    checked-in schema; [] when it fits."""
    errors = _payload_validator(kind, name).iter_errors(payload)
    return [f"{name}: {e.message} at {list(e.absolute_path)}" for e in errors]


def uri_path(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


def offset_of(text: str, pos: lsp.Position, encoding: str) -> int:
    """Where an LSP-conformant editor puts ``pos`` in ``text`` (independent of the server's
    codec): lines end only at \\n, \\r\\n, \\r; a character past the line's content is its
    end (never into the line end); half a character counts as none of it."""
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z", text)  # LSP line ends only
    if pos.line >= len(lines):
        return len(text)
    start = sum(len(x) for x in lines[: pos.line])
    line = lines[pos.line].rstrip("\r\n")
    codec = {"utf-8": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}[encoding]
    width = {"utf-8": 1, "utf-16": 2, "utf-32": 4}[encoding]
    raw = line.encode(codec, "surrogatepass")[: pos.character * width]
    return start + len(raw.decode(codec, errors="ignore"))


def apply_text_edits(text: str, edits: list[Any], encoding: str) -> str:
    spans = sorted(
        (
            (offset_of(text, e.range.start, encoding), offset_of(text, e.range.end, encoding), e)
            for e in edits
        ),
        key=lambda s: (s[0], s[1]),
        reverse=True,
    )
    for start, end, e in spans:
        text = text[:start] + e.new_text + text[end:]
    return text


class Editor:
    """One client session with the server under test."""

    def __init__(self, client: LanguageClient, root: Path, encoding: str) -> None:
        self.client = client
        self.root = root
        self.encoding = encoding
        self.traces: list[dict[str, Any]] = []
        self.proposals: list[dict[str, Any]] = []
        self.edits: list[lsp.ApplyWorkspaceEditParams] = []
        self.buffers: dict[str, tuple[int, str]] = {}
        self.apply_mode: ApplyMode = "apply"
        self.held: list[asyncio.Future[Any]] = []
        self.published: list[lsp.PublishDiagnosticsParams] = []
        #: Payloads the schema does not describe (the session fails at its end).
        self.wire_errors: list[str] = []
        #: Called with each ``driveros/trace`` params as it arrives, before anything else is read.
        self.on_trace: list[Callable[[dict[str, Any]], None]] = []

    # -- documents ---------------------------------------------------------------------
    def uri(self, rel: str) -> str:
        return (self.root / rel).as_uri()

    def open(self, rel: str, text: str | None = None) -> str:
        uri = self.uri(rel)
        body = (self.root / rel).read_bytes().decode("utf-8") if text is None else text
        self.buffers[uri] = (1, body)
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(
                    uri=uri, language_id="python", version=1, text=body
                )
            )
        )
        return uri

    def type_text(self, rel: str, text: str) -> None:
        """Replace the buffer's whole text (an unsaved edit in the editor)."""
        uri = self.uri(rel)
        version = self.buffers[uri][0] + 1
        self.buffers[uri] = (version, text)
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def text(self, rel: str) -> str:
        uri = self.uri(rel)
        if uri in self.buffers:
            return self.buffers[uri][1]
        return (self.root / rel).read_bytes().decode("utf-8")

    # -- requests ----------------------------------------------------------------------
    async def command(self, name: str, *arguments: Any) -> Any:
        result = await self.client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command=name, arguments=list(arguments))
        )
        self.wire_errors += wire_problems("commands", name, result)
        return result

    def list_runs_now(self) -> asyncio.Future[dict[str, Any]]:
        """Send ``driveros.agent.list`` at once (written out before this returns, ahead of
        anything the client reads next); the future is its answer as plain JSON."""
        name = protocol.CMD_AGENT_LIST
        sent = self.client.protocol.send_request(
            lsp.WORKSPACE_EXECUTE_COMMAND, lsp.ExecuteCommandParams(command=name, arguments=[])
        )

        async def answer() -> dict[str, Any]:
            result: dict[str, Any] = _plain(await asyncio.wrap_future(sent))
            self.wire_errors += wire_problems("commands", name, result)
            return result

        return asyncio.ensure_future(answer())

    async def code_actions(
        self,
        rel: str,
        diagnostics: list[lsp.Diagnostic] | None = None,
        only: list[str] | None = None,
    ) -> list[lsp.CodeAction]:
        result = await self.client.text_document_code_action_async(
            lsp.CodeActionParams(
                text_document=lsp.TextDocumentIdentifier(uri=self.uri(rel)),
                range=lsp.Range(
                    start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0)
                ),
                context=lsp.CodeActionContext(diagnostics=diagnostics or [], only=only),
            )
        )
        return [a for a in result or [] if isinstance(a, lsp.CodeAction)]

    async def wait_for(
        self, predicate: Callable[[], Any], *, what: str, timeout: float = 120.0
    ) -> Any:
        async with asyncio.timeout(timeout):
            while not (value := predicate()):
                await asyncio.sleep(0.02)
        assert value, what
        return value

    def events(self, run_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            t["event"]
            for t in self.traces
            if t["runId"] == run_id and (kind is None or t["event"]["type"] == kind)
        ]

    def progress(self, run_id: str) -> list[Any]:
        return [
            v
            for token, values in self.client.progress_reports.items()
            if str(token).startswith(f"driveros/run/{run_id}-")
            for v in values
        ]

    def progress_ended(self, run_id: str) -> bool:
        values = self.progress(run_id)
        return bool(values) and isinstance(values[-1], lsp.WorkDoneProgressEnd)

    def last_proposal(self, run_id: str) -> dict[str, Any] | None:
        found = [p for p in self.proposals if p["runId"] == run_id]
        return found[-1] if found else None

    # -- workspace/applyEdit -----------------------------------------------------------
    def _apply(self, params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
        edit = params.edit
        for change in edit.document_changes or []:
            if isinstance(change, lsp.TextDocumentEdit):
                uri = change.text_document.uri
                version = change.text_document.version
                if uri in self.buffers:
                    have, text = self.buffers[uri]
                    if version is not None and version != have:
                        return lsp.ApplyWorkspaceEditResult(
                            applied=False, failure_reason=f"{uri} is at v{have}, not v{version}"
                        )
                    new = apply_text_edits(text, list(change.edits), self.encoding)
                    self.type_text(str(uri_path(uri).relative_to(self.root)), new)
                else:
                    path = uri_path(uri)
                    old = path.read_bytes().decode("utf-8") if path.exists() else ""
                    new = apply_text_edits(old, list(change.edits), self.encoding)
                    path.write_bytes(new.encode("utf-8"))  # line ends as they are
            elif isinstance(change, lsp.CreateFile):
                path = uri_path(change.uri)
                path.parent.mkdir(parents=True, exist_ok=True)
                if not path.exists():
                    path.write_text("")
            elif isinstance(change, lsp.RenameFile):
                uri_path(change.old_uri).rename(uri_path(change.new_uri))
            elif isinstance(change, lsp.DeleteFile):
                uri_path(change.uri).unlink(missing_ok=True)
        return lsp.ApplyWorkspaceEditResult(applied=True)


def _structure_code_action_items(client: LanguageClient) -> None:
    converter = client.protocol._converter

    def hook(obj: Any, _: Any) -> Any:
        if isinstance(obj, dict) and isinstance(obj.get("command"), str):
            return converter.structure(obj, lsp.Command)
        return converter.structure(obj, lsp.CodeAction)

    converter.register_structure_hook(lsp.Command | lsp.CodeAction, hook)
    converter.register_structure_hook(
        lsp.Union[lsp.Command, lsp.CodeAction],  # type: ignore[attr-defined]
        hook,
    )


def _plain(value: Any) -> Any:
    """pygls hands custom notification params over as namedtuples: back to plain JSON."""
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_BASE_URL", "_MODEL")) and k != "OLLAMA_HOST"
    }
    env.update(extra or {})
    return env


@contextlib.asynccontextmanager
async def editor_session(
    root: Path,
    *,
    profile: str = "vscode",
    env: dict[str, str] | None = None,
    settings: dict[str, Any] | None = None,
    trace: bool = True,
    command: list[str] | None = None,
    root_uri: bool = True,
    workspace_folders: bool = True,
    capabilities: lsp.ClientCapabilities | None = None,
    extra_folders: tuple[Path, ...] = (),
) -> Any:
    """Start ``driveros-lsp --stdio`` under ``profile``'s capabilities; shut it down after.

    ``root_uri``/``workspace_folders`` False: the client opens no folder (a single file).
    ``extra_folders``: more workspace folders after ``root`` (a multi-root workspace).
    """
    client = make_test_lsp_client()
    _structure_code_action_items(client)
    caps = capabilities or client_capabilities(PROFILES.get(profile, profile))
    if trace:
        caps.experimental = {"driverosTrace": True}
    argv = command or [sys.executable, "-m", "driveros_lsp", "--stdio"]
    await client.start_io(argv[0], *argv[1:], env=server_env(env), cwd=str(root))
    result = await client.initialize_session(
        lsp.InitializeParams(
            capabilities=caps,
            root_uri=root.as_uri() if root_uri else None,
            workspace_folders=(
                [
                    lsp.WorkspaceFolder(uri=root.as_uri(), name="ws"),
                    *(lsp.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in extra_folders),
                ]
                if workspace_folders
                else None
            ),
            initialization_options=settings,
        )
    )
    chosen = result.capabilities.position_encoding
    encoding = str(getattr(chosen, "value", chosen) or "utf-16")
    editor = Editor(client, root, encoding)
    editor.initialize_result = result  # type: ignore[attr-defined]

    @client.feature("driveros/trace")
    def on_trace(params: Any) -> None:
        editor.traces.append(_plain(params))
        editor.wire_errors += wire_problems("notifications", "driveros/trace", editor.traces[-1])
        for hook in editor.on_trace:
            hook(editor.traces[-1])

    @client.feature("driveros/proposal")
    def on_proposal(params: Any) -> None:
        editor.proposals.append(_plain(params))
        editor.wire_errors += wire_problems(
            "notifications", "driveros/proposal", editor.proposals[-1]
        )

    client.protocol.fm.features.pop(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, None)

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
        editor.published.append(params)
        client.diagnostics[params.uri] = params.diagnostics

    @client.feature(lsp.WORKSPACE_APPLY_EDIT)
    async def on_apply(params: lsp.ApplyWorkspaceEditParams) -> Any:
        editor.edits.append(params)
        if editor.apply_mode == "refuse":
            return lsp.ApplyWorkspaceEditResult(applied=False, failure_reason="user said no")
        if editor.apply_mode == "hold":
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            editor.held.append(future)
            return await future
        return editor._apply(params)

    try:
        yield editor
        assert not editor.wire_errors, "\n".join(editor.wire_errors[:10])
    finally:
        for future in editor.held:
            if not future.done():
                future.set_result(lsp.ApplyWorkspaceEditResult(applied=False))
        if client._server is not None and client._server.returncode is None:
            await asyncio.wait_for(client.shutdown_session(), 30)
        await client.stop()
