"""DiagnosticsFeed: the project's own checks, run in the sandbox, as one snapshot per call.

Each snapshot rescans the workspace (stat, hash only what changed), then for every planned
check either reuses a cached result (its relevant files hash the same as a previous run),
re-runs it on just the changed files (checks with a ``files_command``, e.g. ruff), or runs
it whole. Checks run concurrently (``max_parallel``), each under its own timeout: a timed-out
check is reported as a warning and keeps its last known diagnostics, it never fails the call.

The feed never reads its configuration from the workspace it checks (the agent writes there):
the caller passes it (``driveros.intel.read_workspace_config`` on the user's trusted workspace
at run start). A configured check is a command someone wrote, so each of its commands is put
to ``approve`` (the run's approval policy, as for the ``run`` tool) before it runs; built-in
checks are the feed's own and need no approval.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import posixpath
import re
import shlex
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Literal

from driveros._errors import SandboxError
from driveros.diagnostics import DiagnosticItem, DiagnosticsSnapshot, fingerprint
from driveros.intel._config import CheckSpec, IntelConfig
from driveros.intel._detect import (
    Probe,
    detect_checks,
    detection_inputs,
    detection_markers,
    is_test_file,
    parse_probe,
    probe_candidates,
    probe_script,
)
from driveros.intel._imports import ImportGraph
from driveros.intel._jobs import JobLimiter, default_limiter
from driveros.intel._parse_common import PathContext, columns_in_code_points, make_item
from driveros.intel._parsers import COLUMN_UNITS, parse_output
from driveros.intel._results import (
    CheckResult,
    CheckRun,
    raw_section,
    result_key,
    spec_digest,
    touched_paths,
)
from driveros.intel._scan import FileIndex, glob_match
from driveros.intel._warm import WarmPytest
from driveros.sandbox import RunResult, Sandbox

_log = logging.getLogger(__name__)

#: Checks run niced: they are background work, and an editor's requests (served by the same
#: machine, often the same process tree) must not queue behind twenty pytest/mypy batches.
#: Without ``renice`` (a minimal image) the check simply runs at normal priority.
_BACKGROUND = "renice -n 10 -p $$ >/dev/null 2>&1; "

#: Results kept per check, keyed by the content hash of its relevant files.
_CACHE_PER_CHECK = 8
#: More changed files than this and a per-file check runs whole instead.
_MAX_PER_FILE = 64
_USAGE_ERROR = re.compile(
    r"unrecognized arguments?|no such option|unknown option|unexpected argument|"
    r"invalid choice|unknown flag",
    re.IGNORECASE,
)


class _CheckRefused(Exception):
    """A configured check's command was refused by the approval policy (message: why)."""


CheckApproval = Callable[[CheckSpec, str], Awaitable[tuple[bool, str]]]
"""Decides whether a configured check may run ``command`` (the exact command line):
``(allowed, reason)``. The agent passes its run's approval policy."""


class DiagnosticsFeed:
    """The build-diagnostics feed over one sandbox (implements ``DiagnosticsSource``).

    ``config`` is fixed for the feed's life (default: the built-in checks only; the workspace's
    own files are never read as configuration here). ``config_problem`` (what was wrong with
    the workspace's configuration) is reported in every snapshot as a warning item.
    ``approve`` is asked before every command of a check from ``config.checks``; a refused
    check is reported as a warning and does not run. Without ``approve`` the caller vouches
    for its configured checks. ``cache_dir`` is where the tools keep their caches (bytecode,
    mypy), as the sandbox's commands see it; the caller owns and removes it
    (``driveros.runs.execute_run`` registers one per run in the state directory). None:
    ``${TMPDIR:-/tmp}/driveros-intel/<hash>``, which nobody removes (fine inside a container
    that goes away). ``limiter`` bounds the check batches running at once across feeds
    (default: the process-wide :func:`~driveros.intel.default_limiter`, one per core): each
    snapshot's checks run while holding one of its slots.
    """

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        config: IntelConfig | None = None,
        cache_dir: str | None = None,
        approve: CheckApproval | None = None,
        config_problem: str | None = None,
        config_origin: str = ".driveros.toml",
        limiter: JobLimiter | None = None,
    ) -> None:
        self._sandbox = sandbox
        self._limiter = limiter or default_limiter()
        self._config = config or IntelConfig()
        self._config_problem = config_problem
        self._config_origin = config_origin
        self._approve = approve
        self._custom = frozenset(c.name for c in self._config.checks)
        self._verdicts: dict[str, tuple[bool, str]] = {}
        self._index = FileIndex(sandbox, exclude=self._config.exclude)
        self._plan: tuple[CheckSpec, ...] = ()
        self._plan_signature: tuple[str, ...] | None = None
        self._probe = Probe()
        self._cache: dict[str, OrderedDict[str, CheckResult]] = {}
        self._latest: dict[str, CheckResult] = {}
        self._fallback: set[str] = set()
        self._lock = asyncio.Lock()
        self._graph = ImportGraph()
        self._graph_lock = asyncio.Lock()
        self._last: DiagnosticsSnapshot | None = None
        self._runs: tuple[CheckRun, ...] = ()
        digest = hashlib.blake2b(str(sandbox.workspace).encode(), digest_size=6).hexdigest()
        # Commands use it inside double quotes: a path that would need escaping there is
        # not used (the default is).
        usable = cache_dir is not None and not any(c in cache_dir for c in '"$`\\\n')
        self._cache_dir = (
            cache_dir if usable and cache_dir else f"${{TMPDIR:-/tmp}}/driveros-intel/{digest}"
        )
        self._warm = WarmPytest(sandbox, self._cache_dir, renice=_BACKGROUND)

    async def aclose(self) -> None:
        """Stop the feed's warm pytest process, if any (closing the sandbox stops it too)."""
        await self._warm.aclose()

    @property
    def last(self) -> DiagnosticsSnapshot | None:
        """The most recent snapshot, if any."""
        return self._last

    @property
    def runs(self) -> tuple[CheckRun, ...]:
        """How each check was satisfied (full run, changed files only, cache) last time."""
        return self._runs

    @property
    def checks(self) -> tuple[CheckSpec, ...]:
        """The current plan (empty before the first snapshot)."""
        return self._plan

    async def snapshot(
        self, *, changed: Sequence[str] = (), full: bool = False
    ) -> DiagnosticsSnapshot:
        """Run what the workspace's state calls for and return what the tools said.

        ``changed`` names files the caller just edited (they are rehashed even if their
        size and mtime look the same); ``full`` ignores every cache and runs all checks
        over the whole workspace.
        """
        async with self._lock:
            ctx = PathContext(roots=(str(self._sandbox.workspace), *self._probe.roots))
            hashes = await self._index.refresh(changed=[ctx.normalize(p) for p in changed])
            await self._refresh_plan(sorted(hashes), hashes)
            sem = asyncio.Semaphore(self._config.max_parallel)
            outcomes: dict[str, tuple[CheckResult, CheckRun]] = {}

            async def one(spec: CheckSpec) -> None:
                async with sem:
                    try:
                        outcomes[spec.name] = await self._check(spec, hashes, full=full)
                    except _CheckRefused as exc:
                        note = _check_warning(spec, "check-refused", str(exc))
                        result = CheckResult(key="", items=(note,), raw=str(exc), hashes={})
                        outcomes[spec.name] = result, CheckRun(name=spec.name, mode="full")
                    except Exception as exc:  # one broken check must not sink the others
                        _log.warning("check %s failed", spec.name, exc_info=True)
                        outcomes[spec.name] = self._broken(spec, exc)

            async with self._limiter.slot(), asyncio.TaskGroup() as tg:
                for spec in self._plan:
                    tg.create_task(one(spec))
            return self._assemble(outcomes)

    def _assemble(
        self, outcomes: Mapping[str, tuple[CheckResult, CheckRun]]
    ) -> DiagnosticsSnapshot:
        items: list[DiagnosticItem] = []
        raw: list[str] = []
        if self._config_problem:
            items.append(
                make_item(
                    path=self._config_origin,
                    severity="warning",
                    code="config",
                    source="driveros",
                    message=self._config_problem,
                )
            )
            raw.append(f"[driveros] {self._config_problem}")
        for spec in self._plan:
            result, _run = outcomes[spec.name]
            items.extend(result.items)
            if result.raw:
                raw.append(result.raw)
        items.sort(key=lambda i: (i.path, i.line, i.column, i.source, i.code or "", i.message))
        checks = tuple(spec.name for spec in self._plan)
        snap = DiagnosticsSnapshot(
            fingerprint=fingerprint(items, checks),
            items=tuple(items),
            checks=checks,
            raw="\n\n".join(raw),
        )
        self._runs = tuple(outcomes[s.name][1] for s in self._plan)
        self._last = snap
        return snap

    async def _refresh_plan(self, files: list[str], hashes: Mapping[str, str]) -> None:
        inputs = detection_inputs(files)
        signature = (*detection_markers(files), *(f"{p}={hashes[p]}" for p in inputs))
        if signature == self._plan_signature:
            return
        texts: dict[str, str] = {}
        for path in inputs:
            try:
                texts[path] = await self._sandbox.read_file(path)
            except SandboxError:
                continue
        result = await self._sandbox.run(probe_script(probe_candidates(files)), timeout=30)
        self._probe = parse_probe(result.stdout)
        self._plan = detect_checks(files, texts, self._probe, self._config, cache=self._cache_dir)
        self._plan_signature = signature
        _log.debug("diagnostics plan: %s", [c.name for c in self._plan])

    def _context(self, spec: CheckSpec) -> PathContext:
        roots = (*self._probe.roots, str(self._sandbox.workspace))
        cwd = "" if spec.cwd in (".", "") else posixpath.normpath(spec.cwd)
        return PathContext(roots=roots, cwd=cwd)

    async def _check(
        self, spec: CheckSpec, hashes: Mapping[str, str], *, full: bool
    ) -> tuple[CheckResult, CheckRun]:
        relevant = {
            p: h for p, h in hashes.items() if not spec.triggers or glob_match(p, spec.triggers)
        }
        key = result_key(spec, relevant)
        cache = self._cache.setdefault(spec.name, OrderedDict())
        if not full and key in cache:
            cache.move_to_end(key)
            self._latest[spec.name] = cache[key]
            return cache[key], CheckRun(name=spec.name, mode="cached")
        prev = self._latest.get(spec.name)
        if prev is not None and prev.spec != spec_digest(spec):
            prev = None  # the check itself changed (new config): nothing to build on
        touched = touched_paths(prev.hashes, relevant) if prev is not None else None
        if full or prev is None or not touched or prev.timed_out:
            # nothing sound to build on; full=True is the cold baseline (docs/intel.md)
            warm = not full and self._warm_capable(spec) and self._warm.running
            return await self._run_full(spec, key, relevant, warm=warm)
        warm = self._warm_capable(spec)
        # the warm process is started by the first incremental snapshot (a run that never
        # edits never has one); the run that starts it does not wait for it
        wait = warm and not await self._warm.start(spec, self._probe.roots)
        if spec.pytest_closure and await self._outside_tests(touched, hashes):
            result = CheckResult(
                key=key, items=prev.items, raw=prev.raw, hashes=relevant, spec=prev.spec
            )
            self._store(spec.name, result)
            return result, CheckRun(name=spec.name, mode="unaffected")
        if warm:
            selected = await self._affected_tests(touched, hashes, prev)
            if selected is not None:
                return await self._run_tests(spec, key, prev, relevant, selected, wait=wait)
        if (
            spec.files_command
            and spec.name not in self._fallback  # files_command speaks the new syntax
            and len(touched) <= _MAX_PER_FILE
            and all(glob_match(p, spec.per_file) for p in touched)
        ):
            return await self._run_files(spec, key, prev, relevant, touched)
        return await self._run_full(spec, key, relevant, warm=warm, wait=wait)

    def _warm_capable(self, spec: CheckSpec) -> bool:
        """The built-in pytest check (only its command takes test paths, and only it runs
        in the warm process; a configured check runs as written)."""
        return spec.pytest_closure and spec.name == "pytest" and spec.name not in self._custom

    async def _run_pytest(
        self, spec: CheckSpec, extra: str, *, warm: bool, wait: bool = True
    ) -> RunResult:
        """``spec.command`` plus ``extra`` in the warm process when there is one serving,
        else (or when it could not serve this run) cold."""
        if warm:
            command = await self._warm.command(spec, extra, wait=wait)
            if command is not None:
                res = await self._execute(spec, command)
                if await self._warm.served(res.exit_code, res.timed_out):
                    return res
            # none ready, refused or gone: a fresh one imports while this run goes cold
            await self._warm.start(spec, self._probe.roots)
        return await self._execute(spec, f"{spec.command} {extra}".rstrip())

    async def _outside_tests(self, touched: set[str], hashes: Mapping[str, str]) -> bool:
        """Whether every touched file is an existing Python module no test imports."""
        if any(p not in hashes or not p.endswith(".py") or is_test_file(p) for p in touched):
            return False
        async with self._graph_lock:
            if not await self._graph.update(self._sandbox, hashes):
                return False
            closure = self._graph.closure(p for p in hashes if is_test_file(p))
        return closure is not None and not (closure & touched)

    async def _affected_tests(
        self, touched: set[str], hashes: Mapping[str, str], prev: CheckResult
    ) -> list[str] | None:
        """The test files an edit can affect: the touched test files and every test file
        importing a touched module, directly or not. None (run the whole suite) whenever
        that is not certain: a deletion, a non-Python or conftest.py change, a dynamic
        import or unparsable file among the tests' imports, a conftest importing a touched
        module, nothing selected, or a previous result not made of per-test-file items."""
        if any(
            p not in hashes or not p.endswith(".py") or posixpath.basename(p) == "conftest.py"
            for p in touched
        ):
            return None
        tests = {p for p in hashes if is_test_file(p)}
        # what is carried over must be attributable to one test file
        if any(item.path not in tests for item in prev.items):
            return None
        async with self._graph_lock:
            if not await self._graph.update(self._sandbox, hashes):
                return None
            if self._graph.closure(tests) is None:
                return None
            affected = self._graph.dependents(touched) & tests
        if not affected or len(affected) > _MAX_PER_FILE:
            return None
        if any(posixpath.basename(p) == "conftest.py" for p in affected):
            return None  # a conftest applies to every test below it
        return sorted(affected)

    async def _run_tests(
        self,
        spec: CheckSpec,
        key: str,
        prev: CheckResult,
        relevant: dict[str, str],
        selected: list[str],
        *,
        wait: bool,
    ) -> tuple[CheckResult, CheckRun]:
        """pytest over ``selected`` only; the other test files' results carry over."""
        chosen = set(selected)
        kept = tuple(i for i in prev.items if i.path not in chosen)
        args = " ".join(shlex.quote(p) for p in selected)
        res = await self._run_pytest(spec, args, warm=True, wait=wait)
        if res.exit_code in (3, 4) and not res.timed_out:
            # internal or usage error: the selection itself may be at fault
            return await self._run_full(spec, key, relevant, warm=True, wait=wait)
        return await self._record(spec, key, relevant, res, keep=kept, files=tuple(selected))

    async def _run_full(
        self,
        spec: CheckSpec,
        key: str,
        relevant: dict[str, str],
        *,
        warm: bool = False,
        wait: bool = True,
    ) -> tuple[CheckResult, CheckRun]:
        if warm:
            res = await self._run_pytest(spec, "", warm=True, wait=wait)
            return await self._record(spec, key, relevant, res, keep=(), files=())
        command = spec.fallback_command if spec.name in self._fallback else spec.command
        res = await self._execute(spec, command or spec.command)
        if (
            spec.fallback_command
            and spec.name not in self._fallback
            and res.exit_code != 0
            and _USAGE_ERROR.search(res.stderr + res.stdout)
        ):
            self._fallback.add(spec.name)
            res = await self._execute(spec, spec.fallback_command)
        return await self._record(spec, key, relevant, res, keep=(), files=())

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

    async def _execute(self, spec: CheckSpec, command: str) -> RunResult:
        timeout = spec.timeout or self._config.timeout
        command = command.replace("{cache}", self._cache_dir)
        refusal = await self._refusal(spec, command)
        if refusal is not None:
            raise _CheckRefused(refusal)
        try:
            # the sandbox enforces the timeout; this bound only guards against a stuck sandbox
            async with asyncio.timeout(timeout + 30):
                return await self._sandbox.run(_BACKGROUND + command, cwd=spec.cwd, timeout=timeout)
        except TimeoutError:
            return RunResult(
                stdout="", stderr="", exit_code=-1, duration_ms=timeout * 1000, timed_out=True
            )
        except SandboxError as exc:
            return RunResult(
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
        res: RunResult,
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
            note = _check_warning(
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
        parsed = parse_output(
            spec.parser, res.stdout, res.stderr, self._context(spec), source=spec.label
        )
        items = list(keep) + await self._code_point_columns(spec, parsed.items)
        if res.exit_code in (126, 127) or (res.exit_code == -1 and not parsed.items):
            items.append(
                _check_warning(
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
        note = _check_warning(
            spec,
            "check-failed",
            f"check {spec.name} failed inside driveros: {type(exc).__name__}: {exc}",
        )
        result = CheckResult(key="", items=(note,), raw=f"[{spec.name}] {exc!r}", hashes={})
        return result, CheckRun(name=spec.name, mode="full")

    def _store(self, name: str, result: CheckResult) -> None:
        cache = self._cache.setdefault(name, OrderedDict())
        cache[result.key] = result
        cache.move_to_end(result.key)
        while len(cache) > _CACHE_PER_CHECK:
            cache.popitem(last=False)
        self._latest[name] = result


def _check_warning(spec: CheckSpec, code: str, message: str) -> DiagnosticItem:
    """A warning about the check itself (not about a file): it timed out, could not run, ..."""
    return make_item(path=".", severity="warning", code=code, source=spec.label, message=message)
