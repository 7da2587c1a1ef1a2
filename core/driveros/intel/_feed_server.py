"""The warm language server as a check (docs/intel.md, "The warm language server").

After an edit, a check whose tool is also the language server the run's semantic tools
started (basedpyright's CLI and ``basedpyright-langserver``, the same version) can take that
server's diagnostics for the edited files and the files importing them, instead of running
the CLI over the whole project. The server's diagnostics go through the CLI's own parser, so
an item has the same identity (path, source, code, message, severity) and position either
way. Whenever the answer could differ from the CLI's, or the server fails, the CLI runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import posixpath
import re
import shlex
import time
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

from driveros._errors import SandboxError
from driveros.diagnostics import DiagnosticItem
from driveros.intel._config import CheckSpec
from driveros.intel._feed_run import FeedRunner, one_line
from driveros.intel._imports import ImportGraph
from driveros.intel._parsers import parse_output
from driveros.intel._results import CheckResult, CheckRun, spec_digest
from driveros.semantic import (
    LanguageServerError,
    SemanticTools,
    files_changed,
    start_server,
    warm_diagnostics,
)

_log = logging.getLogger(__name__)

#: A check parser → (the CLI programs whose checks a server may stand in for, that server).
_PAIRS: Mapping[str, tuple[frozenset[str], str]] = {
    "pyright": (frozenset({"basedpyright"}), "basedpyright"),
}
#: More files than this (the edited ones and their importers) and the CLI runs.
MAX_SERVER_FILES = 64
#: How long the server may take for its answer before the CLI runs instead.
SERVER_TIMEOUT = 30.0
#: A CLI check that took longer than this (seconds) costs more than starting the server, its
#: indexing and its first answer (bench/RESULTS.md): the feed starts one for the next edits.
START_AFTER_S = 3.0
#: How long that start may take before it is given up.
START_TIMEOUT = 120.0
#: LSP severities the CLI reports (hints, 4, it never prints).
_SEVERITY = {1: "error", 2: "warning", 3: "information"}
#: Directories pyright leaves out by default (and the feed's scan never walks).
_HIDDEN = re.compile(r"(^|/)(\.[^/]*|node_modules|__pycache__|site-packages|venv)/")
_GLOB = re.compile(r"[*?\[\]{}]")


class ServerChecks(FeedRunner):
    """The feed's use of the run's warm language servers (a base of ``DiagnosticsFeed``)."""

    _graph: ImportGraph
    _inputs: tuple[tuple[str, ...], dict[str, str]]
    _graph_lock: asyncio.Lock
    _servers: SemanticTools | None
    _runs: tuple[CheckRun, ...]
    #: The server start the feed asked for (once per feed), if any.
    _starting: asyncio.Task[None] | None
    #: Per CLI program, the first line of its ``--version`` ("" when it printed none).
    _cli_versions: dict[str, str]
    #: The Python files the running servers were last told exist (None: not yet told).
    _told: set[str] | None
    #: The server failures logged so far (each is a warning once, then debug).
    _failures: set[str]

    def use_language_servers(self, tools: SemanticTools | None) -> None:
        """The run's semantic tools: their running servers may answer for a check
        (``language_server_checks = "auto"``); None stops that."""
        self._servers = tools

    async def _by_server(
        self,
        spec: CheckSpec,
        key: str,
        prev: CheckResult,
        relevant: dict[str, str],
        touched: set[str],
        hashes: Mapping[str, str],
    ) -> tuple[CheckResult, CheckRun] | None:
        """The check's result from the warm server (None: run the CLI)."""
        program = self._server_program(spec)
        if program is None or self._servers is None:
            return None
        await self._tell_files(self._servers, prev, hashes)
        if any(p not in prev.hashes for p in touched):
            return None  # a new or deleted file changes import resolution: the CLI
        files = await self._server_files(touched, relevant, hashes)
        if files is None:
            return None
        started = time.perf_counter()
        server = _PAIRS[spec.parser][1]
        try:
            got = await warm_diagnostics(
                self._servers, self._sandbox, files, timeout=SERVER_TIMEOUT
            )
            if got is None:  # not running: started only when the CLI costs more
                self._start_when_dearer(spec, files[0])
                return None
            if got.encoding != "utf-16" or got.server != server:
                return None
            cli = await self._cli_version(spec, program)
            if not cli or cli != f"{got.name} {got.version}":
                _log.info(
                    "%s is %r, the server %s %s: the CLI runs", program, cli, got.name, got.version
                )
                return None
            items = await self._server_items(spec, got.files)
        except (LanguageServerError, SandboxError) as exc:
            # the CLI decides; one line per distinct failure, never a traceback
            said = one_line(exc)
            log = _log.debug if said in self._failures else _log.warning
            self._failures.add(said)
            log("%s diagnostics failed (%s); %s runs instead", server, said, spec.name)
            return None
        asked = set(files)
        kept = tuple(i for i in prev.items if i.path not in asked)
        result = CheckResult(
            key=key, items=(*kept, *items), raw="", hashes=relevant, spec=spec_digest(spec)
        )
        self._store(spec.name, result)
        ms = (time.perf_counter() - started) * 1000
        return result, CheckRun(name=spec.name, mode="server", duration_ms=ms, files=files)

    async def _tell_files(
        self, tools: SemanticTools, prev: CheckResult, hashes: Mapping[str, str]
    ) -> None:
        """Tell the running servers which Python files appeared or went since they were last
        told (the feed's own view: created and deleted files, also those a cached snapshot
        passed over), so their import resolution follows the workspace."""
        now = {p for p in hashes if p.endswith((".py", ".pyi"))}
        if self._told is None:  # the servers read the files present before this edit
            self._told = {p for p in prev.hashes if p.endswith((".py", ".pyi"))}
        told = self._told
        created, deleted = sorted(now - told), sorted(told - now)
        self._told = now
        if created or deleted:
            try:
                await files_changed(tools, created=created, deleted=deleted)
            except LanguageServerError as exc:
                _log.debug("telling the language servers of files: %s", one_line(exc))

    def _start_when_dearer(self, spec: CheckSpec, path: str) -> None:
        """Start the server in the background (once per feed) when the check's last CLI run
        took longer than :data:`START_AFTER_S`: this snapshot runs the CLI, the next ones
        may ask the server. A cheap CLI check never starts one."""
        last = next((r for r in self._runs if r.name == spec.name), None)
        if (
            self._servers is None
            or self._starting is not None
            or last is None
            or last.mode != "full"
            or last.duration_ms < START_AFTER_S * 1000
        ):
            return
        server = _PAIRS[spec.parser][1]
        self._starting = asyncio.create_task(self._start(self._servers, path, server))

    async def _start(self, tools: SemanticTools, path: str, server: str) -> None:
        try:
            async with asyncio.timeout(START_TIMEOUT):
                await start_server(tools, path, name=server)
        except Exception as exc:  # a background start: the CLI goes on deciding
            _log.info("starting the language server for %s failed: %s", path, one_line(exc))

    async def _stop_starting(self) -> None:
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._starting

    def _server_program(self, spec: CheckSpec) -> str | None:
        """The CLI program of a built-in check a server can stand in for (its command is
        exactly ``PROGRAM --outputjson``, over the whole project), else None."""
        if self._config.language_server_checks == "off" or spec.name in self._custom:
            return None
        pair = _PAIRS.get(spec.parser)
        if pair is None or spec.cwd not in (".", ""):
            return None
        try:
            words = shlex.split(spec.command)
        except ValueError:
            return None
        if len(words) != 2 or words[1] != "--outputjson":
            return None
        return words[0] if posixpath.basename(words[0]) in pair[0] else None

    async def _server_files(
        self, touched: set[str], relevant: Mapping[str, str], hashes: Mapping[str, str]
    ) -> tuple[str, ...] | None:
        """The edited files and every file importing one, directly or not (the files whose
        diagnostics the edit can change), when the CLI checks each of them; else None."""
        if any(p not in relevant or not p.endswith(".py") or _HIDDEN.search(p) for p in touched):
            return None  # a deletion, a stub, a configuration file: the CLI
        scope = await self._pyright_scope()
        if scope is None:
            return None
        async with self._graph_lock:
            if not await self._graph.update(self._sandbox, hashes):
                return None
            if not self._graph.complete():
                return None  # an unparsable file's imports are unknown
            files = sorted(self._graph.dependents(touched) & set(relevant))
        if len(files) > MAX_SERVER_FILES or not all(
            _in_scope(p, *scope) and not _HIDDEN.search(p) for p in files
        ):
            return None
        return tuple(files)

    async def _pyright_scope(self) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """pyright's ``include`` and ``exclude`` directories (pyrightconfig.json, else
        pyproject.toml's ``[tool.basedpyright]`` or ``[tool.pyright]``); None when they use
        globs or cannot be read (the server checks an open file whatever they say)."""
        table: Any = {}
        try:
            text = await self._sandbox.read_file("pyrightconfig.json")
        except SandboxError:
            text = None
        try:
            if text is not None:
                table = json.loads(_strip_comments(text))
            else:
                pyproject = self._inputs[1].get("pyproject.toml", "")
                tool = tomllib.loads(pyproject).get("tool", {}) if pyproject else {}
                table = tool.get("basedpyright") or tool.get("pyright") or {}
        except (ValueError, tomllib.TOMLDecodeError):
            return None
        if not isinstance(table, dict) or "extends" in table:
            return None  # (a base configuration's include/exclude are not read here)
        dirs: list[tuple[str, ...]] = []
        for name in ("include", "exclude"):
            value = table.get(name, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                return None
            if any(_GLOB.search(v) for v in value):
                return None
            dirs.append(tuple(posixpath.normpath(v.removeprefix("./")) for v in value))
        return dirs[0], dirs[1]

    async def _cli_version(self, spec: CheckSpec, program: str) -> str:
        if program not in self._cli_versions:
            res = await self._sandbox.run(
                f"{shlex.quote(program)} --version", cwd=spec.cwd, timeout=60
            )
            first = res.stdout.strip().splitlines()[:1] if res.exit_code == 0 else []
            self._cli_versions[program] = first[0].strip() if first else ""
        return self._cli_versions[program]

    async def _server_items(
        self, spec: CheckSpec, files: Mapping[str, Sequence[Mapping[str, Any]]]
    ) -> list[DiagnosticItem]:
        """The server's diagnostics as the CLI prints them, through the CLI's parser and
        column conversion (the same normalisation, so the same identity)."""
        entries = []
        for rel, found in files.items():
            for diag in found:
                severity = _SEVERITY.get(diag.get("severity", 1))
                if severity is None:
                    continue  # a hint ("is not accessed"): the CLI never reports one
                entry = {
                    "file": rel,
                    "severity": severity,
                    "message": _cli_message(str(diag.get("message", ""))),
                    "range": diag.get("range"),
                }
                if diag.get("code"):
                    entry["rule"] = str(diag["code"])
                entries.append(entry)
        document = json.dumps({"generalDiagnostics": entries, "summary": {}})
        parsed = await asyncio.to_thread(
            parse_output, spec.parser, document, "", self._context(spec), source=spec.label
        )
        return await self._code_point_columns(spec, parsed.items)


def _in_scope(path: str, include: tuple[str, ...], exclude: tuple[str, ...]) -> bool:
    def under(dirs: tuple[str, ...]) -> bool:
        return any(d == "." or path == d or path.startswith(d + "/") for d in dirs)

    return (not include or under(include)) and not under(exclude)


def _cli_message(message: str) -> str:
    """The CLI indents a message's further lines with no-break spaces, the server with
    spaces."""
    first, *rest = message.split("\n")
    out = [first]
    for line in rest:
        body = line.lstrip(" ")
        out.append("\u00a0" * (len(line) - len(body)) + body)
    return "\n".join(out)


#: A string (group 1; group 2 its closing quote, or the text's end after at most a lone
#: backslash), a line comment, or a block comment (group 3 its end, or the text's). Each
#: alternative matches once it starts, so one pass is linear: an unterminated string is
#: never scanned again from each of its quotes.
_JSONC = re.compile(r'("(?:\\.|[^"\\])*)("|\\?\Z)|//[^\n]*|/\*.*?(\*/|\Z)', re.DOTALL)


def _strip_comments(text: str) -> str:
    """pyrightconfig.json may hold ``//`` and ``/* */`` comments (outside strings);
    ``ValueError`` for an unterminated string or block comment (not JSON either way)."""

    def keep(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            if m.group(2) != '"':
                raise ValueError("pyrightconfig.json: unterminated string")
            return m.group(0)
        if m.group(0).startswith("/*") and m.group(3) != "*/":
            raise ValueError("pyrightconfig.json: unterminated comment")
        return ""

    return _JSONC.sub(keep, text)
