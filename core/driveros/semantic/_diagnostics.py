"""The warm language server's diagnostics for given files, for the diagnostics feed.

The feed asks only a server the run's semantic tools already started (never starts one):
:func:`warm_diagnostics` gives it the files' current text from the sandbox, then asks for
each file's diagnostics with a pull request (``textDocument/diagnostic``, LSP 3.17), which
the server answers against the state it was just given, so nothing published earlier can
pass for the answer. A server that does not answer pull requests is not used.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from driveros.sandbox import Sandbox
from driveros.semantic._client import LanguageServerError
from driveros.semantic._semantic import SemanticTools
from driveros.semantic._session import ServerSession

#: JSON-RPC "method not found": the server has no pull diagnostics.
_NO_METHOD = -32601


@dataclass(frozen=True)
class WarmDiagnostics:
    """What a running server said about some files: its ``serverInfo`` name and version
    (empty when it gave none) and, per workspace-relative path, the LSP ``Diagnostic``
    objects as it sent them (positions in ``encoding``, 0-based)."""

    server: str
    name: str
    version: str
    encoding: str
    files: Mapping[str, Sequence[Mapping[str, Any]]]


def _running(tools: SemanticTools, paths: Sequence[str]) -> ServerSession | None:
    for session in tools.sessions.values():
        if all(session.spec.serves(p) for p in paths):
            if not session.client.alive:  # it crashed or was killed since it answered
                raise LanguageServerError(f"{session.spec.name} is no longer running")
            return session
    return None


async def warm_diagnostics(
    tools: SemanticTools, sandbox: Sandbox, paths: Sequence[str], *, timeout: float
) -> WarmDiagnostics | None:
    """The running server's diagnostics for ``paths`` (all served by one server), or None
    when no server for them was started. :class:`LanguageServerError` when it is no longer
    running, fails, ends or does not answer within ``timeout`` seconds (a
    :class:`~driveros.sandbox.SandboxError` when a file cannot be read)."""
    session = _running(tools, paths)
    if session is None or not paths:
        return None
    info = session.info
    try:
        async with asyncio.timeout(timeout):
            for rel in paths:
                # a new version of every file asked: a server answers an unchanged version
                # from its cache, though a file it imports has changed since
                await session.sync(sandbox, rel, force=True)
            await session.client.wait_ready(settle=0.0, bound=timeout)
            answers = await asyncio.gather(
                *(_pull(session, rel, timeout) for rel in paths), return_exceptions=True
            )
    except TimeoutError:
        raise LanguageServerError(
            f"{session.spec.name} gave no diagnostics within {timeout:g}s"
        ) from None
    found: dict[str, Sequence[Mapping[str, Any]]] = {}
    for rel, answer in zip(paths, answers, strict=True):
        if isinstance(answer, BaseException):
            raise answer
        found[rel] = answer
    return WarmDiagnostics(
        server=session.spec.name,
        name=str(info.get("name") or ""),
        version=str(info.get("version") or ""),
        encoding=session.encoding,
        files={p: found[p] for p in paths},
    )


async def _pull(session: ServerSession, rel: str, timeout: float) -> list[Mapping[str, Any]]:
    try:
        report = await session.client.request(
            "textDocument/diagnostic",
            {"textDocument": {"uri": session.uri(rel)}},
            timeout=timeout,
        )
    except LanguageServerError as exc:
        if exc.context.get("code") == _NO_METHOD:
            raise LanguageServerError(
                f"{session.spec.name} does not answer pull diagnostics"
            ) from None
        raise
    items = report.get("items") if isinstance(report, dict) else None
    if not isinstance(items, list) or report.get("kind") != "full":
        raise LanguageServerError(f"{session.spec.name} sent no full diagnostic report for {rel}")
    return [d for d in items if isinstance(d, dict)]


async def start_server(tools: SemanticTools, path: str, *, name: str | None = None) -> bool:
    """Start the server for ``path``'s language (and let it index) ahead of the model's
    first question, as the semantic tools would on their first call (the feed does this when
    the CLI check it stands in for costs more than a server's start). ``name``: only when
    that is the server configured for ``path`` (False, nothing started, otherwise)."""
    spec = await tools._spec(path)
    if name is not None and spec.name != name:
        return False
    await tools._ready(spec)
    return True


async def files_changed(
    tools: SemanticTools, *, created: Sequence[str] = (), deleted: Sequence[str] = ()
) -> None:
    """Tell every running server which files appeared and which are gone (closed and
    deleted), as an editor's file watcher would: what imports resolve to changes, and no
    server answers from a text it was given before."""
    for session in tools.sessions.values():
        if not session.client.alive:
            continue
        for rel in deleted:
            if session.spec.serves(rel):
                await session.forget(rel)
        new = [{"uri": session.uri(rel), "type": 1} for rel in created if session.spec.serves(rel)]
        if new:
            await session.client.notify("workspace/didChangeWatchedFiles", {"changes": new})
