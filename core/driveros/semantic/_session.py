"""One language server running in the run's sandbox: start, readiness, document sync."""

from __future__ import annotations

import asyncio
import logging
import shlex
from typing import Any, Protocol, runtime_checkable

from driveros._errors import SandboxError
from driveros.sandbox import BackgroundProcess, Sandbox
from driveros.semantic._client import LanguageServerError, LspClient
from driveros.semantic._docker import Launch
from driveros.semantic._positions import line_of, path_uri, to_chars, to_units, uri_path
from driveros.semantic._registry import ServerSpec

_log = logging.getLogger(__name__)


@runtime_checkable
class ProcessHost(Protocol):
    """A sandbox that starts long-lived processes (LocalSandbox and DockerSandbox)."""

    async def start_process(
        self, command: str, *, cwd: str = ".", env: dict[str, str] | None = None
    ) -> BackgroundProcess: ...


def _capabilities() -> dict[str, Any]:
    return {
        "general": {"positionEncodings": ["utf-16"]},
        "window": {"workDoneProgress": True},
        "workspace": {
            "workspaceEdit": {"documentChanges": True, "resourceOperations": []},
            "symbol": {"dynamicRegistration": False},
            "configuration": True,
            "workspaceFolders": True,
        },
        "textDocument": {
            "synchronization": {"dynamicRegistration": False, "didSave": False},
            "definition": {"linkSupport": True},
            "references": {},
            "hover": {"contentFormat": ["markdown", "plaintext"]},
            "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
            "rename": {"prepareSupport": True},
            "publishDiagnostics": {},
        },
    }


class ServerSession:
    """A started server: its client, the workspace root as the sandbox sees it, the
    negotiated position encoding and the documents it has been given."""

    def __init__(self, spec: ServerSpec, client: LspClient, root: str, result: Any) -> None:
        self.spec = spec
        self.client = client
        self.root = root
        caps = result.get("capabilities", {}) if isinstance(result, dict) else {}
        self.capabilities: dict[str, Any] = caps if isinstance(caps, dict) else {}
        info = result.get("serverInfo") if isinstance(result, dict) else None
        #: The server's ``serverInfo`` (name, version), as it gave it.
        self.info: dict[str, Any] = info if isinstance(info, dict) else {}
        encoding = self.capabilities.get("positionEncoding", "utf-16")
        self.encoding = encoding if encoding in ("utf-8", "utf-16", "utf-32") else "utf-16"
        self._docs: dict[str, tuple[int, str]] = {}
        self._lock = asyncio.Lock()
        #: The latest published diagnostics per workspace-relative path.
        self.diagnostics: dict[str, list[dict[str, Any]]] = {}
        self._published: dict[str, asyncio.Event] = {}
        client.on_diagnostics = self._on_diagnostics

    @classmethod
    async def start(
        cls, sandbox: Sandbox, spec: ServerSpec, launch: Launch, *, ready_bound: float
    ) -> ServerSession:
        """Find ``spec``'s program inside the sandbox (on its ``PATH`` with the launch's
        ``path`` first, then its ``candidates``), start it on the workspace root with the
        launch's ``env`` added and initialize it; :class:`LanguageServerError` when it is
        missing (saying the launch's ``install``, else the spec's) or fails to start."""
        if not isinstance(sandbox, ProcessHost):
            raise LanguageServerError(f"the {sandbox.tier} sandbox cannot run a language server")
        # The sandbox's own PATH stays; the tier's server directories only go before it.
        prefix = "".join(f"{shlex.quote(d)}:" for d in launch.path)
        setup = f'PATH={prefix}"$PATH"; export PATH; ' if prefix else ""
        names = " ".join(shlex.quote(c) for c in (spec.command[0], *launch.candidates))
        found = await sandbox.run(
            f'{setup}printf "%s\\n" "$PWD"; for c in {names}; do '
            'p=$(command -v -- "$c") && { printf "%s\\n" "$p"; exit 0; }; done; exit 127',
            timeout=30,
        )
        lines = found.stdout.splitlines()
        if found.exit_code != 0 or len(lines) < 2:
            raise LanguageServerError(
                f"{spec.name} (`{spec.command[0]}`) is not installed where the {sandbox.tier} "
                f"sandbox can run it; install it: {launch.install or spec.install}",
                server=spec.name,
            )
        root, program = lines[0], lines[1]
        command = setup + "exec " + shlex.join([program, *spec.command[1:]])
        try:
            env = dict(launch.env) or None
            proc = await sandbox.start_process(command, cwd=".", env=env)
        except SandboxError as exc:
            raise LanguageServerError(f"{spec.name} could not start: {exc}") from exc
        client = LspClient(proc, spec.name)
        try:
            uri = path_uri(root, "").rstrip("/")
            result = await client.request(
                "initialize",
                {
                    "processId": None,
                    "clientInfo": {"name": "driveros"},
                    "rootUri": uri,
                    "rootPath": root,
                    "workspaceFolders": [{"uri": uri, "name": root.rsplit("/", 1)[-1]}],
                    "capabilities": _capabilities(),
                },
                timeout=ready_bound,
            )
            await client.notify("initialized", {})
            session = cls(spec, client, root, result)
            if not await client.wait_ready(settle=0.3, bound=ready_bound):
                _log.info("%s still indexing after %gs", spec.name, ready_bound)
            return session
        except BaseException:
            await client.aclose(grace=0.5)
            raise

    def _on_diagnostics(self, params: dict[str, Any]) -> None:
        rel, inside = uri_path(self.root, str(params.get("uri", "")))
        items = params.get("diagnostics")
        if inside and isinstance(items, list):
            self.diagnostics[rel] = [d for d in items if isinstance(d, dict)]
            self._published.setdefault(rel, asyncio.Event()).set()

    async def published(self, rel: str, bound: float) -> bool:
        """Wait (up to ``bound`` seconds) for the server's first diagnostics for ``rel``."""
        event = self._published.setdefault(rel, asyncio.Event())
        try:
            async with asyncio.timeout(bound):
                await event.wait()
        except TimeoutError:
            return False
        return True

    def uri(self, rel: str) -> str:
        return path_uri(self.root, rel)

    def has_open(self) -> bool:
        return bool(self._docs)

    async def sync(self, sandbox: Sandbox, rel: str, *, force: bool = False) -> str:
        """Give the server the file's current text from the sandbox (open or change it);
        the text. ``force``: a new version even when the text is the one it has (so a server
        that caches per version checks it again)."""
        text = await sandbox.read_file(rel)
        async with self._lock:
            known = self._docs.get(rel)
            if known is None:
                self._docs[rel] = (1, text)
                await self.client.notify(
                    "textDocument/didOpen",
                    {
                        "textDocument": {
                            "uri": self.uri(rel),
                            "languageId": self.spec.language_id(rel),
                            "version": 1,
                            "text": text,
                        }
                    },
                )
            elif known[1] != text or force:
                version = known[0] + 1
                self._docs[rel] = (version, text)
                await self.client.notify(
                    "textDocument/didChange",
                    {
                        "textDocument": {"uri": self.uri(rel), "version": version},
                        "contentChanges": [{"text": text}],
                    },
                )
        return text

    async def forget(self, rel: str) -> None:
        """The file is gone: close it and say so (the server drops what it held)."""
        async with self._lock:
            if self._docs.pop(rel, None) is not None:
                await self.client.notify(
                    "textDocument/didClose", {"textDocument": {"uri": self.uri(rel)}}
                )
            await self.client.notify(
                "workspace/didChangeWatchedFiles",
                {"changes": [{"uri": self.uri(rel), "type": 3}]},
            )

    def position(self, text: str, line: int, column: int) -> dict[str, int]:
        """1-based line and character column → the server's position."""
        row = max(0, line - 1)
        return {"line": row, "character": to_units(line_of(text, row), column - 1, self.encoding)}

    def column(self, text: str | None, pos: Any) -> tuple[int, int]:
        """A server position → (1-based line, 1-based character column)."""
        row = int(pos.get("line", 0)) if isinstance(pos, dict) else 0
        units = int(pos.get("character", 0)) if isinstance(pos, dict) else 0
        if text is None:
            return row + 1, units + 1
        return row + 1, to_chars(line_of(text, row), units, self.encoding) + 1

    async def aclose(self) -> None:
        await self.client.aclose()
