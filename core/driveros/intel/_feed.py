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
from collections.abc import Mapping, Sequence

from driveros._errors import SandboxError
from driveros.diagnostics import DiagnosticItem, DiagnosticsSnapshot, fingerprint
from driveros.intel._config import CheckSpec, IntelConfig
from driveros.intel._detect import (
    BuildPlan,
    detect_build,
    detection_inputs,
    detection_markers,
    node_dirs,
)
from driveros.intel._feed_run import (
    BACKGROUND,
    CheckRefused,
    FeedOptions,
    check_warning,
    one_line,
    sandbox_contains,
)
from driveros.intel._feed_server import ServerChecks
from driveros.intel._imports import ImportGraph
from driveros.intel._jobs import default_limiter
from driveros.intel._parse_common import PathContext, make_item
from driveros.intel._plan import is_test_file
from driveros.intel._probe import Probe, parse_probe, probe_candidates, probe_script
from driveros.intel._results import (
    CheckResult,
    CheckRun,
    result_key,
    spec_digest,
    touched_paths,
)
from driveros.intel._scan import FileIndex, glob_match
from driveros.intel._warm import WarmPytest
from driveros.sandbox import CommandResult, Sandbox

_log = logging.getLogger(__name__)

#: More changed files than this and a per-file check runs whole instead.
_MAX_PER_FILE = 64
_TEST_CODES = frozenset({"test-failure", "test-error"})
_USAGE_ERROR = re.compile(
    r"unrecognized arguments?|no such option|unknown option|unexpected argument|"
    r"invalid choice|unknown flag",
    re.IGNORECASE,
)


#: Items saying a check itself did not do its job (not a finding about the code).
_FAILED_CODES = frozenset({"check-failed", "check-refused", "timeout", "over-budget"})


class DiagnosticsFeed(ServerChecks):
    """The build-diagnostics feed over one sandbox (implements ``DiagnosticsSource``).

    ``config`` is fixed for the feed's life (default: the built-in checks only; the workspace's
    own files are never read as configuration here). ``options`` wire it into its run
    (:class:`~driveros.intel.FeedOptions`: cache directory, approval of configured checks, the
    configuration's problem, the job limiter, the build callback, the task's test files).
    Each snapshot's checks run while holding one of the limiter's slots.
    """

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        config: IntelConfig | None = None,
        options: FeedOptions | None = None,
    ) -> None:
        opts = options or FeedOptions()
        cache_dir = opts.cache_dir
        self._sandbox = sandbox
        self._limiter = opts.limiter or default_limiter()
        self._config = config or IntelConfig()
        self._config_problem = opts.config_problem
        self._config_origin = opts.config_origin
        self._approve = opts.approve
        self._on_build = opts.on_build
        self._build_news = False
        self._focus = tuple(opts.focus)
        self._contained = sandbox_contains(sandbox)
        self._build = BuildPlan()
        self._inputs: tuple[tuple[str, ...], dict[str, str]] = ((), {})
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
        self._servers = None
        self._cli_versions = {}
        self._starting = None
        self._told = None
        self._failures = set()
        self._last: DiagnosticsSnapshot | None = None
        self._runs: tuple[CheckRun, ...] = ()
        digest = hashlib.blake2b(str(sandbox.workspace).encode(), digest_size=6).hexdigest()
        # Commands use it inside double quotes: a path that would need escaping there is
        # not used (the default is).
        usable = cache_dir is not None and not any(c in cache_dir for c in '"$`\\\n')
        self._cache_dir = (
            cache_dir if usable and cache_dir else f"${{TMPDIR:-/tmp}}/driveros-intel/{digest}"
        )
        self._warm = WarmPytest(sandbox, self._cache_dir, renice=BACKGROUND)

    async def aclose(self) -> None:
        """Stop the feed's warm pytest process, if any (closing the sandbox stops it too),
        and a language server start it asked for that is still under way."""
        await self._stop_starting()
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

    @property
    def build(self) -> BuildPlan:
        """The detected build: checks, what the project declares, what does not run and why."""
        return self._build

    async def run_tool(self, name: str) -> DiagnosticsSnapshot:
        """Run one linter or type checker the project does not use (``ruff``, ``mypy``,
        ``pyright``, ``flake8``) once, on request: its findings are only shown, never part of
        the feed's snapshots (so never a ``--fix`` target or a stuck signal)."""
        async with self._lock:
            if self._plan_signature is None:  # no snapshot yet: detect first
                hashes = await self._index.refresh(changed=[])
                await self._refresh_plan(sorted(hashes), hashes)
            files, texts = self._inputs
            config = self._config.model_copy(update={"tools": (name,), "tests": "off"})
            build = detect_build(files, texts, self._probe, config, cache=self._cache_dir)
            spec = next((c for c in build.checks if c.name == name), None)
            return await self.on_request(name, spec)

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
                    except CheckRefused as exc:
                        note = check_warning(spec, "check-refused", str(exc))
                        result = CheckResult(key="", items=(note,), raw=str(exc), hashes={})
                        outcomes[spec.name] = result, CheckRun(name=spec.name, mode="full")
                    except Exception as exc:  # one broken check must not sink the others
                        # one line for the user; the traceback only at debug level
                        _log.warning("check %s failed: %s", spec.name, one_line(exc))
                        _log.debug("check %s traceback", spec.name, exc_info=True)
                        outcomes[spec.name] = self._broken(spec, exc)

            async with self._limiter.slot(), asyncio.TaskGroup() as tg:
                for spec in self._plan:
                    tg.create_task(one(spec))
            snap = self._assemble(outcomes)
            if self._build_news and self._on_build is not None:
                self._build_news = False
                failed = tuple(i.message for i in snap.items if i.code in _FAILED_CODES)
                await self._on_build(self._build, failed)
            return snap

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
        # what the project declares that does not run here, and why: one line each
        raw.extend(f"[driveros] {note}" for note in self._build.notes)
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
        for path in [*inputs, *await self._workflows()]:
            try:
                texts[path] = await self._sandbox.read_file(path)
            except SandboxError:
                continue
        candidates = probe_candidates(files, node_dirs(files))
        result = await self._sandbox.run(probe_script(candidates), timeout=30)
        self._probe = parse_probe(result.stdout)
        build = detect_build(
            files,
            texts,
            self._probe,
            self._config,
            cache=self._cache_dir,
            contained=self._contained,
        )
        changed = build != self._build
        self._build, self._plan = build, build.checks
        self._inputs = (tuple(files), texts)
        self._plan_signature = signature
        _log.debug("diagnostics plan: %s", [c.name for c in self._plan])
        # told once the snapshot that runs the new plan is done (what could not run included)
        self._build_news = self._build_news or changed

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
        served = await self._by_server(spec, key, prev, relevant, touched, hashes)
        if served is not None:  # the warm language server answered for the edited files
            return served
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
        if self._selectable_unittest(spec):
            selected = await self._affected_tests(touched, hashes, prev)
            if selected is not None:
                return await self._run_unittest(spec, key, prev, relevant, selected)
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

    def _selectable_unittest(self, spec: CheckSpec) -> bool:
        """The built-in unittest check on its default discovery (test modules by name)."""
        return (
            spec.parser == "unittest"
            and spec.name not in self._custom
            and spec.command.endswith("-m unittest")
        )

    async def _run_unittest(
        self,
        spec: CheckSpec,
        key: str,
        prev: CheckResult,
        relevant: dict[str, str],
        selected: list[str],
    ) -> tuple[CheckResult, CheckRun]:
        """unittest over the ``selected`` test modules; the others' results carry over."""
        modules = [p[: -len(".py")].replace("/", ".") for p in selected]
        if any(not m.replace(".", "").replace("_", "").isalnum() for m in modules):
            return await self._run_full(spec, key, relevant)
        chosen = set(selected)
        kept = tuple(i for i in prev.items if i.path not in chosen)
        res = await self._execute(spec, f"{spec.command} {shlex.join(modules)}")
        return await self._record(spec, key, relevant, res, keep=kept, files=tuple(selected))

    async def _run_pytest(
        self, spec: CheckSpec, extra: str, *, warm: bool, wait: bool = True
    ) -> CommandResult:
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
        # every test that failed before runs again, whatever the edit touched
        affected |= {i.path for i in prev.items if i.code in _TEST_CODES and i.path in tests}
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
        if res.timed_out and spec.budget_command:
            return await self._over_budget(spec, key, relevant)
        if (
            spec.fallback_command
            and spec.name not in self._fallback
            and res.exit_code != 0
            and _USAGE_ERROR.search(res.stderr + res.stdout)
        ):
            self._fallback.add(spec.name)
            res = await self._execute(spec, spec.fallback_command)
        return await self._record(spec, key, relevant, res, keep=(), files=())

    async def _over_budget(
        self, spec: CheckSpec, key: str, relevant: dict[str, str]
    ) -> tuple[CheckResult, CheckRun]:
        """The whole suite exceeded its budget: collect only, plus the test files the task
        names (``focus``), and say so."""
        assert spec.budget_command is not None
        # the budget was the whole suite's; collecting and the named files get the usual time
        usual = spec.model_copy(update={"timeout": self._config.timeout})
        res = await self._execute(usual, spec.budget_command)
        result, run = await self._record(spec, key, relevant, res, keep=(), files=())
        focus = [p for p in self._focus if is_test_file(p) and p in relevant]
        if focus:
            more = await self._execute(usual, f"{spec.command} {shlex.join(focus)}")
            result, run = await self._record(
                spec, key, relevant, more, keep=result.items, files=tuple(focus)
            )
        budget = spec.timeout or self._config.timeout
        note = check_warning(
            spec,
            "over-budget",
            f"the test suite took longer than {budget:g}s: collected only"
            + (f", plus {', '.join(focus)}" if focus else ""),
        )
        result = result.model_copy(update={"items": (*result.items, note)})
        self._store(spec.name, result)
        return result, run
