"""The five semantic tools over the run's language servers (docs/semantic.md, "The tools").

Servers start lazily, on the first call that needs one, inside the run's sandbox on its
workspace (the scratch view under review), stay warm for the run, and end with
:meth:`SemanticTools.aclose` (or with the sandbox). Files the agent edited are given to the
server before the next question, so answers reflect the scratch state.

A front end that reads its editor's unsaved buffers (``before_file``: the run's buffer hook,
``driveros.runs._buffers``) has them adopted into the run's copy for every file a rename
touches, not only the file the call names: the files of the server's edit go through the hook,
and when that changed one, the server is given the new text and asked again, so the edit
applied is the rename of the text the editor has. A symbol's file goes through it too before
its position is used.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from driveros._errors import DriverosError, SandboxError
from driveros.sandbox import Sandbox
from driveros.semantic._client import LanguageServerError
from driveros.semantic._docker import launch_for
from driveros.semantic._edits import apply_workspace_edit, edited_paths
from driveros.semantic._positions import line_of, uri_path
from driveros.semantic._registry import (
    ServerSpec,
    load_user_servers,
    merge_servers,
    server_for,
)
from driveros.semantic._session import ServerSession
from driveros.semantic._symbols import Candidate, flatten, format_outline, kind_name, resolve

_log = logging.getLogger(__name__)

#: References listed in full; past it the answer says how many were left out.
MAX_REFERENCES = 200
#: Workspace symbols listed for a query.
MAX_SYMBOLS = 100
#: A server that crashed this many times in a run is not started again.
MAX_STARTS = 3
#: How long the first opened file waits for its diagnostics (the project is loaded).
PUBLISH_WAIT = 15.0
#: A rename is asked again at most this many times after the editor's buffers changed its
#: files (each file is adopted once per run, so this only bounds a chain of new files).
ADOPT_ROUNDS = 3
_SKIP_DIRS = (".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", "vendor")


@dataclass
class SemanticResult:
    """A tool's answer for the model, the places it names (path, 1-based line and column,
    at most :data:`MAX_REFERENCES`) and the files it changed (rename)."""

    text: str
    locations: list[tuple[str, int, int]] = field(default_factory=list)
    edits: list[str] = field(default_factory=list)


class SemanticTools:
    """The run's language servers and the tools' logic over them."""

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        servers: Sequence[ServerSpec] | None = None,
        environ: Mapping[str, str] | None = None,
        ready_bound: float = 60.0,
        request_timeout: float = 60.0,
        before_file: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self._sandbox = sandbox
        #: The run's buffer hook (see the module docstring); None: no editor buffers.
        self._before_file = before_file
        self._adopted: set[str] = set()
        #: None: the defaults and the user's own, read on first use.
        self._servers = tuple(servers) if servers is not None else None
        self._environ = environ
        self._ready_bound = ready_bound
        self._timeout = request_timeout
        self._sessions: dict[str, ServerSession] = {}
        self._starts: dict[str, int] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._dirty: set[str] = set()
        self._files: list[str] | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def touched(self, paths: Iterable[str]) -> None:
        """Files an edit tool changed: given to the servers before their next answer."""
        paths = list(paths)
        self._dirty.update(paths)
        if self._files is not None:  # a new file may bring a language the workspace lacked
            self._files = sorted(set(self._files).union(paths))

    @property
    def sessions(self) -> dict[str, ServerSession]:
        """The servers started so far, by name (for tests and the benchmark)."""
        return dict(self._sessions)

    async def aclose(self) -> None:
        """Shut every server down (``shutdown``/``exit``, then the process is stopped)."""
        sessions, self._sessions = list(self._sessions.values()), {}
        await asyncio.gather(*(s.aclose() for s in sessions), return_exceptions=True)

    async def _session(self, spec: ServerSpec) -> ServerSession:
        lock = self._locks.setdefault(spec.name, asyncio.Lock())
        async with lock:
            session = self._sessions.get(spec.name)
            if session is not None and session.client.alive:
                return session
            if session is not None:
                self._sessions.pop(spec.name)
                await session.aclose()
            starts = self._starts.get(spec.name, 0)
            if starts >= MAX_STARTS:
                raise LanguageServerError(
                    f"{spec.name} ended {starts} times in this run; it is not started again"
                )
            self._starts[spec.name] = starts + 1
            launch = launch_for(self._sandbox, spec, self._environ)
            session = await ServerSession.start(
                self._sandbox, spec, launch, ready_bound=self._ready_bound
            )
            self._sessions[spec.name] = session
            return session

    async def _configured(self) -> tuple[ServerSpec, ...]:
        if self._servers is None:
            users = await asyncio.to_thread(load_user_servers, self._environ)
            self._servers = merge_servers(users)
        return self._servers

    async def _spec(self, path: str) -> ServerSpec:
        """The server for ``path``, after the fence allowed the path (a refused or missing
        file starts no server)."""
        await self._sandbox.stat(path)
        servers = await self._configured()
        spec = server_for(servers, path)
        if spec is None:
            ext = PurePosixPath(path).suffix or path
            known = ", ".join(f"{s.name} ({' '.join(s.filetypes)})" for s in servers)
            raise LanguageServerError(
                f"no language server is configured for {ext} files; configured: {known}"
            )
        return spec

    async def _ready(self, spec: ServerSpec) -> ServerSession:
        session = await self._session(spec)
        for rel in sorted(self._dirty):
            if spec.serves(rel):
                try:
                    await session.sync(self._sandbox, rel)
                except SandboxError:  # deleted since (or no longer text)
                    await session.forget(rel)
                self._dirty.discard(rel)
        if not session.has_open():  # some servers (tsserver) answer nothing before one is open
            for first in [f for f in await self._workspace_files() if spec.serves(f)][:20]:
                try:
                    await session.sync(self._sandbox, first)
                except SandboxError:  # gone since the listing, or not text
                    continue
                # Opening the first file is what starts some servers' project loading
                # (tsserver): its diagnostics for that file mean the project is loaded.
                await session.published(first, min(self._ready_bound, PUBLISH_WAIT))
                break
        return session

    async def _request(self, session: ServerSession, method: str, params: Any) -> Any:
        await session.client.wait_ready(settle=0.0, bound=self._ready_bound)
        return await session.client.request(method, params, timeout=self._timeout)

    async def _adopt(self, paths: Iterable[str]) -> list[str]:
        """Give each path's editor buffer to the run's copy (once per path and run); the
        paths whose text that changed. The hook's failures cost only the buffer."""
        if self._before_file is None:
            return []
        changed = []
        for rel in paths:
            if rel in self._adopted:
                continue
            self._adopted.add(rel)
            before = await self._text({}, rel)
            try:
                await self._before_file(rel)
            except (DriverosError, OSError) as exc:
                _log.info("the editor's buffer of %s: %s", rel, exc)
                continue
            if await self._text({}, rel) != before:
                changed.append(rel)
                self.touched([rel])
        return changed

    async def _workspace_files(self) -> list[str]:
        if self._files is None:
            prune = " -o ".join(f"-name {d}" for d in _SKIP_DIRS)
            res = await self._sandbox.run(
                f"find . \\( {prune} \\) -prune -o -type f -print 2>/dev/null | head -50000",
                timeout=60,
            )
            self._files = sorted(
                line[2:] for line in res.stdout.splitlines() if line.startswith("./")
            )
        return self._files

    async def _languages(self) -> list[ServerSpec]:
        files = await self._workspace_files()
        return [s for s in await self._configured() if any(s.serves(f) for f in files)]

    # -- positions ---------------------------------------------------------------------

    async def _target(
        self, path: str | None, line: int | None, column: int | None, symbol: str | None
    ) -> tuple[ServerSession, str, dict[str, int], str]:
        """(session, path, server position, what is asked about) for a position or symbol."""
        if symbol:
            cand = await self._resolve(symbol, path)
            if await self._adopt([cand.path]):  # the editor's text moved it: look again
                cand = await self._resolve(symbol, path)
            path, line, column = cand.path, cand.line, cand.column
            label = symbol
        elif path is None or line is None or column is None:
            raise LanguageServerError("give path, line and column, or symbol")
        else:
            label = f"{path}:{line}:{column}"
        session = await self._ready(await self._spec(path))
        text = await session.sync(self._sandbox, path)
        if symbol is None:
            word = _word_at(line_of(text, line - 1), column - 1)
            label = word or label
        return session, path, session.position(text, line, column), label

    async def _resolve(self, symbol: str, path: str | None) -> Candidate:
        if path is not None:
            session = await self._ready(await self._spec(path))
            text = await session.sync(self._sandbox, path)
            found = await self._request(
                session, "textDocument/documentSymbol", {"textDocument": {"uri": session.uri(path)}}
            )
            cands = flatten(session, path, text, found)
            return resolve(symbol, cands, where=path)
        cands = []
        for spec in await self._languages():
            session = await self._ready(spec)
            found = await self._request(
                session, "workspace/symbol", {"query": symbol.split(".")[-1]}
            )
            cands += await self._candidates(session, found)
        return resolve(symbol, [c for c in cands if c.inside], where="the workspace")

    async def _candidates(self, session: ServerSession, found: Any) -> list[Candidate]:
        out = []
        texts: dict[str, str | None] = {}
        for item in found if isinstance(found, list) else []:
            loc = item.get("location") if isinstance(item, dict) else None
            if not isinstance(loc, dict):
                continue
            rel, inside = uri_path(session.root, str(loc.get("uri", "")))
            rng = loc.get("range", {"start": {"line": 0, "character": 0}})
            text = await self._text(texts, rel) if inside else None
            line, column = session.column(text, rng.get("start", {}))
            name = str(item.get("name", ""))
            if text is not None:  # a range may start before the name: find it on that line
                at = line_of(text, line - 1).find(name.split(".")[-1], column - 1)
                column = at + 1 if at >= 0 else column
            container = str(item.get("containerName") or "")
            out.append(
                Candidate(name, kind_name(item.get("kind")), rel, line, column, container, inside)
            )
        return out

    async def _text(self, cache: dict[str, str | None], rel: str) -> str | None:
        if rel not in cache:
            try:
                cache[rel] = await self._sandbox.read_file(rel)
            except (SandboxError, OSError, UnicodeDecodeError):
                cache[rel] = None
        return cache[rel]

    async def _locations(
        self, session: ServerSession, found: Any
    ) -> list[tuple[str, int, int, str]]:
        """(path, line, column, line text) of Location / LocationLink results, sorted."""
        items = found if isinstance(found, list) else [found] if isinstance(found, dict) else []
        texts: dict[str, str | None] = {}
        out = set()
        for item in items:
            if not isinstance(item, dict):
                continue
            uri = item.get("uri", item.get("targetUri"))
            rng = item.get("range", item.get("targetSelectionRange"))
            if not isinstance(uri, str) or not isinstance(rng, dict):
                continue
            rel, inside = uri_path(session.root, uri)
            text = await self._text(texts, rel) if inside else None
            line, column = session.column(text, rng.get("start", {}))
            shown = line_of(text, line - 1).strip() if text is not None else ""
            out.add((rel, line, column, shown))
        return sorted(out)

    # -- the tools ---------------------------------------------------------------------

    async def definition(
        self, path: str | None, line: int | None, column: int | None, symbol: str | None
    ) -> SemanticResult:
        session, rel, pos, label = await self._target(path, line, column, symbol)
        found = await self._request(
            session,
            "textDocument/definition",
            {"textDocument": {"uri": session.uri(rel)}, "position": pos},
        )
        locs = await self._locations(session, found)
        if not locs:
            return SemanticResult(f"no definition found for {label}")
        lines = [f"definition of {label}:"] + [f"{p}:{ln}:{c}: {t}" for p, ln, c, t in locs]
        return SemanticResult(
            "\n".join(lines), [(p, ln, c) for p, ln, c, _ in locs[:MAX_REFERENCES]]
        )

    async def references(
        self, path: str | None, line: int | None, column: int | None, symbol: str | None
    ) -> SemanticResult:
        session, rel, pos, label = await self._target(path, line, column, symbol)
        found = await self._request(
            session,
            "textDocument/references",
            {
                "textDocument": {"uri": session.uri(rel)},
                "position": pos,
                "context": {"includeDeclaration": True},
            },
        )
        locs = await self._locations(session, found)
        if not locs:
            return SemanticResult(f"no references found for {label}")
        files = len({p for p, _, _, _ in locs})
        head = f"{len(locs)} references to {label} in {files} files (declaration included):"
        shown = locs[:MAX_REFERENCES]
        lines = [head] + [f"{p}:{ln}:{c}: {t}" for p, ln, c, t in shown]
        if len(locs) > len(shown):
            lines.append(f"[{len(locs) - len(shown)} more references not shown]")
        return SemanticResult("\n".join(lines), [(p, ln, c) for p, ln, c, _ in shown])

    async def hover(
        self, path: str | None, line: int | None, column: int | None, symbol: str | None
    ) -> SemanticResult:
        session, rel, pos, label = await self._target(path, line, column, symbol)
        found = await self._request(
            session,
            "textDocument/hover",
            {"textDocument": {"uri": session.uri(rel)}, "position": pos},
        )
        text = hover_text(found)
        at = (line, column) if symbol is None and line and column else (pos["line"] + 1, 1)
        where = [(rel, *at)]
        return SemanticResult(text or f"no hover information for {label}", where)

    async def symbols(self, query: str | None, path: str | None) -> SemanticResult:
        if path is not None:
            session = await self._ready(await self._spec(path))
            text = await session.sync(self._sandbox, path)
            found = await self._request(
                session, "textDocument/documentSymbol", {"textDocument": {"uri": session.uri(path)}}
            )
            outline = format_outline(session, text, found)
            return SemanticResult(
                f"outline of {path}:\n{outline}" if outline else f"no symbols in {path}",
                [(path, 1, 1)],
            )
        if not query:
            raise LanguageServerError("give query (workspace symbols) or path (a file's outline)")
        cands: list[Candidate] = []
        for spec in await self._languages():
            session = await self._ready(spec)
            found = await self._request(session, "workspace/symbol", {"query": query})
            cands += [c for c in await self._candidates(session, found) if c.inside]
        if not cands:
            return SemanticResult(f"no workspace symbols match {query!r}")
        shown = cands[:MAX_SYMBOLS]
        lines = [c.describe() for c in shown]
        if len(cands) > len(shown):
            lines.append(f"[{len(cands) - len(shown)} more symbols not shown: narrow the query]")
        return SemanticResult("\n".join(lines), [(c.path, c.line, c.column) for c in shown])

    async def rename(
        self,
        path: str | None,
        line: int | None,
        column: int | None,
        symbol: str | None,
        new_name: str,
    ) -> SemanticResult:
        session, rel, pos, label = await self._target(path, line, column, symbol)
        doc = {"textDocument": {"uri": session.uri(rel)}, "position": pos}
        provider = session.capabilities.get("renameProvider")
        if isinstance(provider, dict) and provider.get("prepareProvider"):
            prepared = await self._request(session, "textDocument/prepareRename", doc)
            if prepared is None:
                raise LanguageServerError(f"{session.spec.name} cannot rename {label} here")
        found = await self._request(session, "textDocument/rename", {**doc, "newName": new_name})
        for _ in range(ADOPT_ROUNDS):  # the files it edits, as the editor has them
            if not found or not await self._adopt(edited_paths(session, found)):
                break
            await self._ready(session.spec)  # the adopted texts go to the server
            found = await self._request(
                session, "textDocument/rename", {**doc, "newName": new_name}
            )
        if not found:
            raise LanguageServerError(f"{session.spec.name} proposed no edit renaming {label}")
        changed = await apply_workspace_edit(self._sandbox, session, found)
        self.touched(changed)
        rows = {p: sorted({line for line, _ in starts}) for p, starts in changed.items()}
        edits = sum(len(v) for v in rows.values())
        lines = [f"renamed {label} to {new_name}: {edits} edits in {len(changed)} files"]
        lines += [f"{p}: lines {', '.join(str(n) for n in ns)}" for p, ns in sorted(rows.items())]
        # where the old name stands in the files as they were (the user's, until accepted)
        locs = [(p, ln, c) for p, starts in sorted(changed.items()) for ln, c in starts]
        locs = locs[:MAX_REFERENCES]
        return SemanticResult("\n".join(lines), locs, sorted(changed))


def hover_text(found: Any) -> str:
    """The text of a Hover result (MarkupContent, MarkedString or a list of them)."""
    contents = found.get("contents") if isinstance(found, dict) else None
    parts = contents if isinstance(contents, list) else [contents]
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, dict) and isinstance(part.get("value"), str):
            lang = part.get("language")
            out.append(f"```{lang}\n{part['value']}\n```" if lang else part["value"])
    return "\n\n".join(p.strip() for p in out if p and p.strip())


def _word_at(line: str, char: int) -> str:
    if not 0 <= char < len(line) or not (line[char].isalnum() or line[char] == "_"):
        return ""
    start = char
    while start > 0 and (line[start - 1].isalnum() or line[start - 1] == "_"):
        start -= 1
    end = char
    while end < len(line) and (line[end].isalnum() or line[end] == "_"):
        end += 1
    return line[start:end]
