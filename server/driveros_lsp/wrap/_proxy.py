"""The wrapper's routing: client ↔ inner server ↔ driveros, one message at a time.

Messages pass as the bytes they came in unless the wrapper must change them (docs/wrap.md,
"Wrapping another server"):

- ``initialize`` goes to the inner server first; driveros then gets the client's params with
  the position encoding the inner server chose (one encoding for both) and its own section of
  the ``initializationOptions``; the client gets the inner result with driveros' code action
  kinds and commands merged in.
- ``textDocument/codeAction`` goes to both; the answer is the inner server's actions then
  driveros'. When the client's context carries no diagnostics (eglot sends ``[]`` for a range
  flymake has none in), driveros gets the inner server's published diagnostics at the range.
- ``workspace/executeCommand`` of a ``driveros.`` command, ``driveros/…`` requests and
  ``codeAction/resolve`` of a driveros action stay with driveros; the rest goes to the inner
  server.
- Document sync, ``initialized``, ``workspace/didChangeConfiguration`` (driveros' section only)
  and ``shutdown`` go to both; ``shutdown`` is answered once both have.
- Requests driveros sends the client get ids of their own (``driveros-wrap/<random>/N``), so
  that the client's answer finds its way back; the inner server's ids are left as they are.
- ``publishDiagnostics`` for a document both servers report on is their union.

The inner server exiting on its own is reported (``window/showMessage``, a log line with the
end of its stderr); its pending requests are answered with an error, later ones at once, and
driveros keeps serving.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from driveros_lsp._wire import _json_constant, _json_int, one_line
from driveros_lsp.features.lifecycle import stop_everything
from driveros_lsp.wrap import _merge
from driveros_lsp.wrap._inner import FrameWriter, InnerServer, frame, read_frames

if TYPE_CHECKING:
    from driveros_lsp._server import DriverosLanguageServer
    from driveros_lsp._text import Encoding
    from driveros_lsp._wire import DriverosProtocol

logger = logging.getLogger(__name__)

#: The prefix of the ids driveros' own requests to the client carry on the wire.
OWN_ID_PREFIX = "driveros-wrap/"
#: Seconds ``shutdown`` waits for the inner server's answer before it is answered anyway.
SHUTDOWN_GRACE_S = 5.0
#: JSON-RPC's "internal error" and LSP's "request failed".
INTERNAL_ERROR = -32603
REQUEST_FAILED = -32803
_BOTH = frozenset(
    {
        "initialized",
        "textDocument/didOpen",
        "textDocument/didClose",
        "textDocument/didSave",
        "workspace/didChangeWorkspaceFolders",
    }
)
_PUBLISH = "textDocument/publishDiagnostics"


def _loads(body: bytes) -> Any:
    return json.loads(body, parse_int=_json_int, parse_constant=_json_constant)


def _dumps(message: Any) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@dataclass
class _Joined:
    """A client request both servers answer; ``finish`` runs once both parts are in."""

    method: str
    finish: Callable[[_Joined], None]
    inner: dict[str, Any] | None = None
    own: dict[str, Any] | None = None
    has_inner: bool = False
    has_own: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class Wrapper:
    """One session: the client on ``client`` (``write(bytes)``), the inner server, driveros."""

    def __init__(self, server: DriverosLanguageServer, inner: InnerServer, client: Any) -> None:
        self._server = server
        self._inner = inner
        self._client = client
        self._joined: dict[Any, _Joined] = {}
        self._own_requests: dict[str, Any] = {}
        self._own_ids = 0
        # unguessable, so that a request of the inner server can never carry the id of one of
        # driveros' (the client's answer to it would be taken as driveros')
        self._own_prefix = f"{OWN_ID_PREFIX}{secrets.token_hex(8)}/"
        #: Requests the inner server has not answered yet (answered for it if it exits).
        self._inner_pending: set[Any] = set()
        self._inner_diags: dict[str, list[Any]] = {}
        self._own_diags: dict[str, list[Any]] = {}
        self.inner_alive = True
        self._stopping = False
        #: Ids of the requests that only driveros answers (their $/cancelRequest goes there).
        self._own_only: set[Any] = set()
        #: The session's position encoding (the inner server's choice).
        self._encoding: Encoding = "utf-16"

    # -- the session ---------------------------------------------------------------------------

    async def serve(self, reader: Any) -> None:
        """Serve until the client sends ``exit`` or goes away; then stop both servers."""
        self._server.protocol.set_writer(FrameWriter(self._from_own))
        inner_task = asyncio.ensure_future(self._inner_loop())
        try:
            async for body in read_frames(reader):
                if self._from_client(body):
                    break
        finally:
            self._stopping = True
            try:
                await self._inner.stop()
            finally:
                await asyncio.gather(inner_task, return_exceptions=True)
                await stop_everything(self._server)

    async def _inner_loop(self) -> None:
        try:
            async for body in self._inner.frames():
                self._from_inner(body)
        except Exception:
            logger.exception("reading the wrapped server failed")
        if not self._stopping:
            await self._inner_exited()

    async def _inner_exited(self) -> None:
        self.inner_alive = False
        code = await self._inner.returncode()
        if self._stopping:
            return
        status = "was killed" if code is not None and code < 0 else f"exited with status {code}"
        text = (
            f"driveros: the wrapped language server `{self._inner.name}` {status}: its features "
            "are gone until the editor restarts the server; driveros' own actions still work."
        )
        tail = self._inner.stderr_tail()
        logger.error("%s", text)
        self._notify("window/showMessage", {"type": 1, "message": text})
        detail = text + ("\nits last stderr lines:\n" + "\n".join(tail) if tail else "")
        self._notify("window/logMessage", {"type": 1, "message": detail})
        for mid in list(self._inner_pending):
            self._inner_gone(mid)
        for mid, joined in list(self._joined.items()):
            if not joined.has_inner:
                self._inner_part(mid, None)

    # -- writing ---------------------------------------------------------------------------------

    def _to_client(self, body: bytes) -> None:
        self._client.write(frame(body))

    def _notify(self, method: str, params: Any) -> None:
        self._to_client(_dumps({"jsonrpc": "2.0", "method": method, "params": params}))

    def _error(self, mid: Any, code: int, message: str) -> None:
        error = {"code": code, "message": message}
        self._to_client(_dumps({"jsonrpc": "2.0", "id": mid, "error": error}))

    def _inner_gone(self, mid: Any) -> None:
        self._inner_pending.discard(mid)
        self._error(mid, REQUEST_FAILED, f"the wrapped server {self._inner.name} has exited")

    def _to_inner(self, body: bytes, mid: Any = None, *, request: bool = False) -> None:
        if not self.inner_alive:
            if request:
                self._inner_gone(mid)
            return
        if request:
            self._inner_pending.add(mid)
        self._inner.send(body)

    def _to_own(self, message: dict[str, Any]) -> None:
        try:
            protocol = cast("DriverosProtocol", self._server.protocol)
            protocol.handle_message(message)
        except Exception:  # a bug: logged, and the session goes on
            logger.exception("driveros failed to handle %s", one_line(str(message.get("method"))))

    # -- client -> servers -----------------------------------------------------------------------

    def _from_client(self, body: bytes) -> bool:
        """Route one client message; True after ``exit``."""
        try:
            message = _loads(body)
        except ValueError:
            self._to_inner(body)
            return False
        if not isinstance(message, dict):
            self._to_inner(body)
            return False
        method = message.get("method")
        mid = message.get("id")
        if not isinstance(method, str):  # an answer to a server's request
            if isinstance(mid, str) and mid in self._own_requests:
                message["id"] = self._own_requests.pop(mid)
                self._to_own(message)
            else:
                self._to_inner(body)
            return False
        request = "id" in message
        if method == "exit":
            self._to_inner(body)
            return True
        handler = _CLIENT_ROUTES.get(method)
        if handler is not None:
            handler(self, body, message)
        elif method.startswith("driveros/"):
            self._own_only.add(mid)
            self._to_own(message)
        elif method in _BOTH:
            self._to_inner(body)
            self._to_own(message)
        else:
            self._to_inner(body, mid, request=request)
        return False

    def _join(self, message: dict[str, Any], finish: Callable[[_Joined], None]) -> _Joined:
        joined = _Joined(method=str(message["method"]), finish=finish)
        self._joined[message["id"]] = joined
        return joined

    def _initialize(self, body: bytes, message: dict[str, Any]) -> None:
        joined = self._join(message, self._initialized)
        joined.extra["params"] = message.get("params")
        self._to_inner(body, message["id"], request=False)
        if not self.inner_alive:
            self._inner_part(message["id"], None)

    def _initialized(self, joined: _Joined) -> None:
        """Both answered initialize (driveros is asked once the inner server answered)."""
        mid = joined.extra["id"]
        inner = joined.inner
        result = inner.get("result") if inner is not None else None
        if inner is not None and "error" in inner:
            self._to_client(_dumps(inner))
            return
        own = joined.own.get("result") if joined.own is not None else None
        merged = dict(result) if isinstance(result, dict) else {}
        merged["capabilities"] = _merge.merge_capabilities(
            merged.get("capabilities"), own.get("capabilities") if isinstance(own, dict) else None
        )
        if "serverInfo" not in merged and isinstance(own, dict):
            merged["serverInfo"] = own.get("serverInfo")
        self._to_client(_dumps({"jsonrpc": "2.0", "id": mid, "result": merged}))

    def _code_action(self, body: bytes, message: dict[str, Any]) -> None:
        self._join(message, self._code_actions_done)
        params = message.get("params")
        if isinstance(params, dict):
            context = params.get("context")
            doc = params.get("textDocument")
            uri = doc.get("uri") if isinstance(doc, dict) else None
            if isinstance(context, dict) and not context.get("diagnostics") and uri:
                found = _merge.diagnostics_at(self._inner_diags.get(uri, []), params.get("range"))
                if found:
                    message = {
                        **message,
                        "params": {**params, "context": {**context, "diagnostics": found}},
                    }
        self._to_inner(body, message["id"], request=False)
        if not self.inner_alive:
            self._inner_part(message["id"], None)
        self._to_own(message)

    def _code_actions_done(self, joined: _Joined) -> None:
        mid = joined.extra["id"]
        inner, own = joined.inner, joined.own
        if inner is not None and "error" in inner and (own is None or "error" in own):
            self._to_client(_dumps(inner))
            return
        result = _merge.merge_actions(
            inner.get("result") if inner is not None else None,
            own.get("result") if own is not None else None,
        )
        self._to_client(_dumps({"jsonrpc": "2.0", "id": mid, "result": result}))

    def _shutdown(self, body: bytes, message: dict[str, Any]) -> None:
        mid = message["id"]
        joined = self._join(message, self._shutdown_done)
        self._to_inner(body, mid, request=False)
        if not self.inner_alive:
            self._inner_part(mid, None)
        else:  # an inner server that never answers does not hold the editor's shutdown

            def late() -> None:
                if self._joined.get(mid) is joined and not joined.has_inner:
                    logger.warning("the wrapped server did not answer shutdown in time")
                    self._inner_part(mid, None)

            asyncio.get_running_loop().call_later(SHUTDOWN_GRACE_S, late)
        self._to_own(message)

    def _shutdown_done(self, joined: _Joined) -> None:
        mid = joined.extra["id"]
        self._to_client(_dumps({"jsonrpc": "2.0", "id": mid, "result": None}))

    def _execute_command(self, body: bytes, message: dict[str, Any]) -> None:
        params = message.get("params")
        command = params.get("command") if isinstance(params, dict) else None
        if isinstance(command, str) and command.startswith("driveros."):
            self._own_only.add(message.get("id"))
            self._to_own(message)
        else:
            self._to_inner(body, message.get("id"), request="id" in message)

    def _resolve(self, body: bytes, message: dict[str, Any]) -> None:
        if _merge.is_own_action(message.get("params")) and "id" in message:
            # driveros' actions are complete as offered: resolving one changes nothing
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": message.get("params")}
            self._to_client(_dumps(answer))
        else:
            self._to_inner(body, message.get("id"), request="id" in message)

    def _did_change(self, body: bytes, message: dict[str, Any]) -> None:
        """Forward as is; driveros gets the whole new text. It syncs whole documents (pygls
        splits incremental changes on more line ends than LSP has), while the client sends
        what the inner server asked for, often incremental changes."""
        self._to_inner(body)
        params = message.get("params")
        if not isinstance(params, dict):
            self._to_own(message)
            return
        doc = params.get("textDocument")
        uri = doc.get("uri") if isinstance(doc, dict) else None
        changes = params.get("contentChanges")
        current = self._server.workspace.text_documents.get(uri) if isinstance(uri, str) else None
        if isinstance(changes, list) and current is not None:
            text = _merge.apply_changes(current.source, changes, self._encoding)
            if text is not None:
                message = {**message, "params": {**params, "contentChanges": [{"text": text}]}}
        self._to_own(message)

    def _configuration(self, body: bytes, message: dict[str, Any]) -> None:
        self._to_inner(body)
        own = _merge.own_configuration(message.get("params"))
        if own is not None:
            self._to_own({**message, "params": own})

    def _cancel(self, body: bytes, message: dict[str, Any]) -> None:
        params = message.get("params")
        target = params.get("id") if isinstance(params, dict) else None
        if target in self._own_only:
            self._to_own(message)
        else:
            self._to_inner(body)

    def _progress_cancel(self, body: bytes, message: dict[str, Any]) -> None:
        params = message.get("params")
        token = params.get("token") if isinstance(params, dict) else None
        if isinstance(token, str) and token.startswith("driveros/"):
            self._to_own(message)
        else:
            self._to_inner(body)

    # -- answers from the two servers ------------------------------------------------------------

    def _inner_part(self, mid: Any, message: dict[str, Any] | None) -> None:
        joined = self._joined.get(mid)
        if joined is None:
            return
        joined.inner, joined.has_inner = message, True
        if joined.method == "initialize":  # now driveros, with the inner server's encoding
            result = message.get("result") if message is not None else None
            encoding = _merge.position_encoding(result)
            if encoding in ("utf-8", "utf-16", "utf-32"):
                self._encoding = cast("Encoding", encoding)
            params = _merge.own_initialize_params(joined.extra["params"], encoding)
            self._to_own({"jsonrpc": "2.0", "id": mid, "method": "initialize", "params": params})
        self._maybe_finish(mid, joined)

    def _own_part(self, mid: Any, message: dict[str, Any]) -> None:
        joined = self._joined[mid]
        joined.own, joined.has_own = message, True
        self._maybe_finish(mid, joined)

    def _maybe_finish(self, mid: Any, joined: _Joined) -> None:
        if joined.has_inner and joined.has_own and self._joined.get(mid) is joined:
            del self._joined[mid]
            joined.extra["id"] = mid
            joined.finish(joined)

    def _from_inner(self, body: bytes) -> None:
        try:
            message = _loads(body)
        except ValueError:
            self._to_client(body)
            return
        if not isinstance(message, dict):
            self._to_client(body)
            return
        method = message.get("method")
        if method is None:
            mid = message.get("id")
            if mid in self._joined:
                self._inner_part(mid, message)
                return
            self._inner_pending.discard(mid)
        elif method == _PUBLISH:
            params = message.get("params")
            if isinstance(params, dict) and isinstance(params.get("uri"), str):
                uri = params["uri"]
                diags = params.get("diagnostics")
                self._inner_diags[uri] = diags if isinstance(diags, list) else []
                if self._own_diags.get(uri):
                    self._publish(uri, params)
                    return
        self._to_client(body)

    def _from_own(self, body: bytes) -> None:
        try:
            message = _loads(body)
        except ValueError:  # driveros writes JSON: a bug
            logger.error("driveros wrote a message that is not JSON")
            return
        method = message.get("method")
        mid = message.get("id")
        if method is None:
            if mid in self._joined:
                self._own_part(mid, message)
                return
            self._own_only.discard(mid)
        elif mid is not None:  # a request of driveros to the client: an id of its own
            self._own_ids += 1
            wire_id = f"{self._own_prefix}{self._own_ids}"
            self._own_requests[wire_id] = mid
            message["id"] = wire_id
            body = _dumps(message)
        elif method == _PUBLISH:
            params = message.get("params")
            if isinstance(params, dict) and isinstance(params.get("uri"), str):
                uri = params["uri"]
                diags = params.get("diagnostics")
                self._own_diags[uri] = diags if isinstance(diags, list) else []
                self._publish(uri, params)
                return
        self._to_client(body)

    def _publish(self, uri: str, params: dict[str, Any]) -> None:
        union = self._inner_diags.get(uri, []) + self._own_diags.get(uri, [])
        self._notify(_PUBLISH, {**params, "diagnostics": union})


_Route = Callable[[Wrapper, bytes, dict[str, Any]], None]
_CLIENT_ROUTES: dict[str, _Route] = {
    "initialize": Wrapper._initialize,
    "shutdown": Wrapper._shutdown,
    "textDocument/codeAction": Wrapper._code_action,
    "codeAction/resolve": Wrapper._resolve,
    "workspace/executeCommand": Wrapper._execute_command,
    "workspace/didChangeConfiguration": Wrapper._configuration,
    "textDocument/didChange": Wrapper._did_change,
    "$/cancelRequest": Wrapper._cancel,
    "window/workDoneProgress/cancel": Wrapper._progress_cancel,
}
