"""How the feed runs one command of a check and records what it said (the base of
:class:`~driveros.intel.DiagnosticsFeed`): approval of configured checks, the sandbox call
under its timeout, parsing, column units, the per-check result cache."""

from __future__ import annotations

import asyncio
import posixpath
import shlex
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from driveros._errors import SandboxError
from driveros.diagnostics import DiagnosticItem, DiagnosticsSnapshot, fingerprint
from driveros.intel._config import CheckSpec, IntelConfig
from driveros.intel._detect import BuildPlan
from driveros.intel._jobs import JobLimiter
from driveros.intel._parse_common import (
    ParseResult,
    PathContext,
    columns_in_code_points,
    make_item,
)
from driveros.intel._parsers import COLUMN_UNITS, parse_output
from driveros.intel._probe import Probe
from driveros.intel._results import CheckResult, CheckRun, raw_section, spec_digest
from driveros.sandbox import CommandResult, Sandbox

#: Checks run niced: they are background work, and an editor's requests (served by the same
#: machine, often the same process tree) must not queue behind twenty pytest/mypy batches.
#: Without ``renice`` (a minimal image) the check simply runs at normal priority.
BACKGROUND = "renice -n 10 -p $$ >/dev/null 2>&1; "

#: Results kept per check, keyed by the content hash of its relevant files.
_CACHE_PER_CHECK = 8


class CheckRefused(Exception):
    """A configured check's command was refused by the approval policy (message: why)."""


CheckApproval = Callable[[CheckSpec, str], Awaitable[tuple[bool, str]]]
"""Decides whether a configured check may run ``command`` (the exact command line):
``(allowed, reason)``. The agent passes its run's approval policy."""


OnBuild = Callable[[BuildPlan, tuple[str, ...]], Awaitable[None]]
"""Told the detected build and, one line each, the checks that failed to run, after the first
snapshot that runs a (re)detected plan (a run emits it as an event)."""


@dataclass(frozen=True)
class FeedOptions:
    """How a :class:`~driveros.intel.DiagnosticsFeed` is wired into its run (all optional).

    ``cache_dir``: where the tools keep their caches (bytecode, mypy), as the sandbox's
    commands see it; the caller owns and removes it. None: ``${TMPDIR:-/tmp}/driveros-intel/
    <hash>``, which nobody removes (fine inside a container that goes away).
    ``approve``: asked before every command of a check from the configuration's ``checks``; a
    refused check is reported as a warning and does not run. None: the caller vouches for its
    configured checks. ``config_problem``: what was wrong with the workspace's configuration
    (reported in every snapshot as a warning item at ``config_origin``). ``limiter``: bounds
    the check batches running at once across feeds (default: the process-wide
    :func:`~driveros.intel.default_limiter`). ``on_build``: told the detected build.
    ``focus``: test files the task names (still run when the suite is over its budget).
    """

    cache_dir: str | None = None
    approve: CheckApproval | None = None
    config_problem: str | None = None
    config_origin: str = ".driveros.toml"
    limiter: JobLimiter | None = None
    on_build: OnBuild | None = None
    focus: Sequence[str] = ()


def sandbox_contains(sandbox: Sandbox) -> bool:
    """Whether the sandbox contains what it runs (an OS sandbox or a container with the
    network off), so the project's tests may run by default. The one place that asks."""
    return sandbox.contained


class FeedRunner:
    """The state :class:`~driveros.intel.DiagnosticsFeed` sets up, and running one command."""

    _sandbox: Sandbox
    _config: IntelConfig
    _cache_dir: str
    _custom: frozenset[str]
    _approve: CheckApproval | None
    _verdicts: dict[str, tuple[bool, str]]
    _cache: dict[str, OrderedDict[str, CheckResult]]
    _latest: dict[str, CheckResult]
    _probe: Probe

    async def _workflows(self) -> list[str]:
        """CI workflow files (the scan leaves dot-directories out)."""
        try:
            entries = await self._sandbox.list_dir(".github/workflows")
        except SandboxError:
            return []
        names = sorted(e.name for e in entries if e.name.endswith((".yml", ".yaml")))
        return [f".github/workflows/{n}" for n in names[:20]]

    async def on_request(self, name: str, spec: CheckSpec | None) -> DiagnosticsSnapshot:
        """A snapshot of one check run on request (``spec`` None: it cannot run here)."""
        if spec is None:
            raw = f"[{name}] not available: not installed in the sandbox, or not a Python project"
            return DiagnosticsSnapshot(fingerprint=fingerprint((), ()), raw=raw)
        res = await self._execute(spec, spec.command)
        parsed = await self._parse(spec, res)
        items = tuple(await self._code_point_columns(spec, parsed.items))
        raw = raw_section(spec, res, parsed.unparsed)
        note = f"[{name}] run on request: the project does not use it; not a build error"
        return DiagnosticsSnapshot(
            fingerprint=fingerprint(items, (name,)),
            items=items,
            checks=(name,),
            raw="\n".join(x for x in (note, raw) if x),
        )

    async def _parse(self, spec: CheckSpec, res: CommandResult) -> ParseResult:
        """The check's output parsed in a worker thread: a big output (a whole test suite's
        report) never holds up the loop that drives the runs."""
        ctx = self._context(spec)
        return await asyncio.to_thread(
            parse_output, spec.parser, res.stdout, res.stderr, ctx, source=spec.label
        )

    def _context(self, spec: CheckSpec) -> PathContext:
        roots = (*self._probe.roots, str(self._sandbox.workspace))
        cwd = "" if spec.cwd in (".", "") else posixpath.normpath(spec.cwd)
        return PathContext(roots=roots, cwd=cwd)

    async def _run_files(
        self,
        spec: CheckSpec,
        key: str,
        prev: CheckResult,
        relevant: dict[str, str],
        touched: set[str],
    ) -> tuple[CheckResult, CheckRun]:
        present = sorted(p for p in touched if p in relevant)
        kept = tuple(i for i in prev.items if i.path not in touched)
        if not present:  # only deletions: drop their diagnostics, nothing to run
            result = CheckResult(key=key, items=kept, raw="", hashes=relevant, spec=prev.spec)
            self._store(spec.name, result)
            return result, CheckRun(name=spec.name, mode="files")
        base = "" if spec.cwd in (".", "") else posixpath.normpath(spec.cwd)
        args = " ".join(shlex.quote(posixpath.relpath(p, base) if base else p) for p in present)
        assert spec.files_command is not None
        res = await self._execute(spec, spec.files_command.replace("{files}", args))
        return await self._record(spec, key, relevant, res, keep=kept, files=tuple(present))

    async def _execute(self, spec: CheckSpec, command: str) -> CommandResult:
        timeout = spec.timeout or self._config.timeout
        command = command.replace("{cache}", self._cache_dir)
        refusal = await self._refusal(spec, command)
        if refusal is not None:
            raise CheckRefused(refusal)
        try:
            # the sandbox enforces the timeout; this bound only guards against a stuck sandbox
            async with asyncio.timeout(timeout + 30):
                return await self._sandbox.run(BACKGROUND + command, cwd=spec.cwd, timeout=timeout)
        except TimeoutError:
            return CommandResult(
                stdout="", stderr="", exit_code=-1, duration_ms=timeout * 1000, timed_out=True
            )
        except SandboxError as exc:
            return CommandResult(
                stdout="", stderr=f"could not run: {exc}", exit_code=-1, duration_ms=0.0
            )

    async def _refusal(self, spec: CheckSpec, command: str) -> str | None:
        """Why a configured check may not run ``command`` (None: it may). One decision per
        exact command line per feed, so a user is asked once per run."""
        if spec.name not in self._custom or self._approve is None:
            return None
        verdict = self._verdicts.get(command)
        if verdict is None:
            verdict = await self._approve(spec, command)
            self._verdicts[command] = verdict
        allowed, reason = verdict
        if allowed:
            return None
        return f"check {spec.name} not run: {reason or 'refused by the approval policy'}"

    async def _record(
        self,
        spec: CheckSpec,
        key: str,
        relevant: dict[str, str],
        res: CommandResult,
        *,
        keep: tuple[DiagnosticItem, ...],
        files: tuple[str, ...],
    ) -> tuple[CheckResult, CheckRun]:
        mode: Literal["full", "files"] = "files" if files else "full"
        run = CheckRun(
            name=spec.name,
            mode=mode,
            duration_ms=res.duration_ms,
            timed_out=res.timed_out,
            exit_code=res.exit_code,
            files=files,
        )
        if res.timed_out:
            timeout = spec.timeout or self._config.timeout
            prev = self._latest.get(spec.name)
            stale = tuple(i for i in prev.items if i.code != "timeout") if prev else ()
            note = check_warning(
                spec,
                "timeout",
                f"check {spec.name} timed out after {timeout:g}s; last known results kept",
            )
            result = CheckResult(
                key=key,
                items=(*stale, note),
                raw=f"[{spec.name}] timed out after {timeout:g}s",
                hashes=prev.hashes if prev else {},
                timed_out=True,
                spec=spec_digest(spec),
            )
            self._latest[spec.name] = result  # never cached: the next snapshot retries
            return result, run
        parsed = await self._parse(spec, res)
        items = list(keep) + await self._code_point_columns(spec, parsed.items)
        if res.exit_code in (126, 127) or (res.exit_code == -1 and not parsed.items):
            items.append(
                check_warning(
                    spec, "check-failed", f"check {spec.name} could not run (exit {res.exit_code})"
                )
            )
        result = CheckResult(
            key=key,
            items=tuple(items),
            raw=raw_section(spec, res, parsed.unparsed),
            hashes=relevant,
            spec=spec_digest(spec),
        )
        self._store(spec.name, result)
        return result, run

    async def _code_point_columns(
        self, spec: CheckSpec, items: list[DiagnosticItem]
    ) -> list[DiagnosticItem]:
        """Columns a tool counts in UTF-16 units or bytes, in code points (read on the
        checked file: a column after é, 中 or 😀 would be off otherwise)."""
        unit = COLUMN_UNITS.get(spec.parser)
        if unit is None:
            return items
        texts: dict[str, list[str] | None] = {}
        out: list[DiagnosticItem] = []
        for item in items:
            if item.column <= 1 and (item.end_column or 0) <= 1:
                out.append(item)
                continue
            if item.path not in texts:
                try:
                    texts[item.path] = (await self._sandbox.read_file(item.path)).split("\n")
                except SandboxError:
                    texts[item.path] = None
            out.append(columns_in_code_points(item, texts[item.path], unit))
        return out

    def _broken(self, spec: CheckSpec, exc: Exception) -> tuple[CheckResult, CheckRun]:
        note = check_warning(
            spec,
            "check-failed",
            f"check {spec.name} failed inside driveros: {one_line(exc)}",
        )
        result = CheckResult(key="", items=(note,), raw=f"[{spec.name}] {one_line(exc)}", hashes={})
        return result, CheckRun(name=spec.name, mode="full")

    def _store(self, name: str, result: CheckResult) -> None:
        cache = self._cache.setdefault(name, OrderedDict())
        cache[result.key] = result
        cache.move_to_end(result.key)
        while len(cache) > _CACHE_PER_CHECK:
            cache.popitem(last=False)
        self._latest[name] = result


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def check_warning(spec: CheckSpec, code: str, message: str) -> DiagnosticItem:
    """A warning about the check itself (not about a file): it timed out, could not run, ..."""
    return make_item(path=".", severity="warning", code=code, source=spec.label, message=message)
