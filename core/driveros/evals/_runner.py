"""Run a suite's cases: concurrently with a bound, retrying infrastructure failures (never
model failures), logging every case's events, resuming an interrupted run.

The seams for scaling past one machine are parameters: ``sandbox_factory`` makes the sandbox
a case runs in (local, docker, or a remote Docker host) and ``executor`` decides where and
how many cases run at once (see docs/evals.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from driveros._atomic import write_atomic
from driveros._errors import ConfigError, DriverosError
from driveros._git import run_git_sync
from driveros._safe_open import append, read_bytes, unlink
from driveros._tmp import temp_root
from driveros.agent import Event
from driveros.approval import approval_policy
from driveros.config import ContainerRuntime, Environment, SandboxKind
from driveros.evals._cassette import Cassette, ReplayLog, recording_client, replay_client
from driveros.evals._results import CaseResult, EvalRun, Mode
from driveros.evals._scoring import case_passed, score_case
from driveros.evals._suite import Case, GitWorkspace, Suite
from driveros.llm import Provider
from driveros.runs import RunSpec, run_in
from driveros.sandbox import DockerSandbox, LocalSandbox, Sandbox

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

SandboxFactory = Callable[[Path], AbstractAsyncContextManager[Sandbox]]
INFRA_OUTCOMES = frozenset({"provider_error", "setup_error"})


class Executor(Protocol):
    """Runs cases with ``runner`` (here or elsewhere: ``runner.suite`` and ``runner.options``
    describe the work portably); results are reported through ``on_done`` as they finish."""

    async def run(
        self,
        cases: Sequence[Case],
        runner: CaseRunner,
        on_done: Callable[[CaseResult], Awaitable[None]],
    ) -> list[CaseResult]: ...


class LocalExecutor:
    """Cases as asyncio tasks on this machine, at most ``concurrency`` at once."""

    def __init__(self, concurrency: int = 2) -> None:
        if concurrency < 1:
            raise ConfigError("concurrency must be at least 1")
        self.concurrency = concurrency

    async def run(
        self,
        cases: Sequence[Case],
        runner: CaseRunner,
        on_done: Callable[[CaseResult], Awaitable[None]],
    ) -> list[CaseResult]:
        return await run_bounded(cases, runner.run, on_done, limit=self.concurrency)


async def run_bounded(
    cases: Sequence[Case],
    work: Callable[[Case], Awaitable[CaseResult]],
    on_done: Callable[[CaseResult], Awaitable[None]],
    *,
    limit: int,
) -> list[CaseResult]:
    """``work`` for every case, at most ``limit`` at once; each result goes to ``on_done`` as
    it finishes (what every executor does, wherever ``work`` runs the case)."""
    gate = asyncio.Semaphore(limit)
    results: list[CaseResult] = []

    async def one(case: Case) -> None:
        async with gate:
            result = await work(case)
        results.append(result)
        await on_done(result)

    async with asyncio.TaskGroup() as tg:
        for case in cases:
            tg.create_task(one(case))
    return results


@contextlib.asynccontextmanager
async def local_sandbox(workspace: Path) -> AsyncIterator[Sandbox]:
    async with LocalSandbox(workspace) as sandbox:
        yield sandbox


def docker_sandbox(runtime: ContainerRuntime = "runc") -> SandboxFactory:
    """Cases in this machine's Docker daemon (the sandbox image must be there: docs/evals.md)."""

    @contextlib.asynccontextmanager
    async def factory(workspace: Path) -> AsyncIterator[Sandbox]:
        async with DockerSandbox(workspace, runtime=runtime) as sandbox:
            yield sandbox

    return factory


class EvalOptions(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    mode: Mode = "live"
    provider: str | None = None
    model: str | None = None
    retries: int = 2
    strict_replay: bool = False
    output_dir: Path
    resume: bool = True
    #: Only these case ids (all when empty).
    only: tuple[str, ...] = ()
    #: Record mode only: play each case's ``scripted`` turns on a loopback scripted model
    #: instead of calling a real provider (how the shipped suites' cassettes are made).
    scripted: bool = False
    #: The sandbox tier cases run in, on whichever machine runs them.
    sandbox: SandboxKind = "local"
    runtime: ContainerRuntime = "runc"
    #: US dollars the whole suite may spend: each case gets what is left as its own cap, and
    #: cases not started once it is spent end ``resource_cap`` without running.
    max_cost_usd: float | None = Field(default=None, gt=0)

    def sandbox_factory(self) -> SandboxFactory:
        return local_sandbox if self.sandbox == "local" else docker_sandbox(self.runtime)


def _replay_provider(cassette: Cassette, client: httpx.AsyncClient) -> Provider:
    base_url = cassette.base_url or "http://replay.invalid/v1"
    if cassette.provider == "anthropic":
        from driveros.llm import anthropic

        return anthropic.claude(
            cassette.model, api_key="replay", base_url=base_url, http_client=client
        )
    from driveros.llm import openaicompat

    presets = {
        "openai": openaicompat.openai,
        "openrouter": openaicompat.openrouter,
        "xai": openaicompat.xai,
        "ollama": openaicompat.ollama,
    }
    preset = presets.get(cassette.provider)
    if preset is not None:
        return preset(cassette.model, api_key="replay", base_url=base_url, http_client=client)
    return openaicompat.OpenAICompatProvider(
        cassette.model,
        base_url=base_url,
        api_key="replay",
        name=cassette.provider,
        http_client=client,
    )


def _prepare_workspace(suite: Suite, case: Case, dest: Path) -> Path:
    work = dest / "workspace"
    if isinstance(case.workspace, GitWorkspace):
        source = case.workspace.git
        local = suite.root / source
        origin = str(local) if local.exists() else source
        dest.mkdir(parents=True, exist_ok=True)  # git clone would create it too
        run_git_sync(["clone", "-q", "--", origin, str(work)], cwd=dest)
        if case.workspace.commit:
            run_git_sync(["checkout", "-q", case.workspace.commit], cwd=work)
        return work
    fixture = suite.workspace_dir(case)
    assert fixture is not None
    if not fixture.is_dir():
        raise ConfigError(f"case {case.id}: workspace {fixture} does not exist")
    shutil.copytree(fixture, work, symlinks=True)
    who = ["-c", "user.name=eval", "-c", "user.email=eval@localhost"]
    run_git_sync([*who, "init", "-q"], cwd=work)
    run_git_sync([*who, "add", "-A"], cwd=work)
    run_git_sync([*who, "commit", "-q", "-m", "fixture"], cwd=work)
    return work


class CaseRunner:
    """Runs one case: workspace copy, provider for the mode, sandbox, agent, scorers."""

    def __init__(
        self,
        suite: Suite,
        options: EvalOptions,
        *,
        env: Environment,
        sandbox_factory: SandboxFactory | None = None,
        verdicts: dict[str, str] | None = None,
    ) -> None:
        self.suite = suite
        self.options = options
        self.env = env
        self.sandbox_factory = sandbox_factory or options.sandbox_factory()
        self.verdicts = verdicts or {}
        #: Dollars the suite's finished cases spent (for ``options.max_cost_usd``).
        self.spent = 0.0

    def _left(self) -> float | None:
        cap = self.options.max_cost_usd
        return None if cap is None else max(cap - self.spent, 1e-9)

    def _live_provider(self, http_client: httpx.AsyncClient | None) -> Provider:
        from driveros.llm import provider_from_env
        from driveros.runs import pick_provider

        return provider_from_env(
            pick_provider(self.env, self.options.provider),
            self.env,
            model=self.options.model,
            http_client=http_client,
        )

    async def run(self, case: Case) -> CaseResult:
        cap = self.options.max_cost_usd
        if cap is not None and self.spent >= cap:
            return CaseResult(
                suite=self.suite.name,
                case_id=case.id,
                outcome="resource_cap",
                exit_code=3,
                passed=False,
                answer=f"not run: the suite's cost limit of ${cap:.4f} is spent "
                f"(${self.spent:.4f})",
            )
        result = await self._run(case)
        self.spent += result.usage.cost_usd or 0.0
        return result

    async def _run(self, case: Case) -> CaseResult:
        attempts = 0
        last: CaseResult | None = None
        while attempts <= self.options.retries:
            attempts += 1
            last = await self._attempt(case, attempts)
            if last.infra_error is None:
                return last
            log.warning(
                "case %s attempt %d: infrastructure failure: %s",
                case.id,
                attempts,
                last.infra_error,
            )
            if self.options.mode == "replay":
                break  # a replay is deterministic: retrying cannot help
        assert last is not None
        return last

    async def _attempt(self, case: Case, attempt: int) -> CaseResult:
        started = time.perf_counter()
        events: list[Event] = []
        replay_log = ReplayLog()
        cassette: Cassette | None = None
        events_file = self.options.output_dir / "events" / f"{case.id}.jsonl"

        async def on_event(event: Event) -> None:
            events.append(event)

        base = await asyncio.to_thread(temp_root)  # $TMPDIR or an error, never another
        with tempfile.TemporaryDirectory(prefix=f"driveros-eval-{case.id}-", dir=base) as tmp:
            try:
                workspace = await asyncio.to_thread(_prepare_workspace, self.suite, case, Path(tmp))
                async with contextlib.AsyncExitStack() as stack:
                    provider, cassette = await self._provider_for(
                        case, replay_log, stack, workspace
                    )
                    stack.push_async_callback(provider.aclose)
                    sandbox = await stack.enter_async_context(self.sandbox_factory(workspace))
                    spec = _case_spec(
                        case,
                        task=case.task,
                        workspace=workspace,
                        sandbox=self.options.sandbox,
                        runtime=self.options.runtime,
                        max_iterations=case.max_iterations or self.suite.defaults.max_iterations,
                        max_wall_s=case.max_wall_s or self.suite.defaults.max_wall_s,
                        max_cost_usd=self._left(),
                        # the feed, its detector and target matching when the case wants it
                        diagnostics=bool(case.targets or case.diagnostics),
                        targets=list(case.targets),
                        run_id=f"{self.suite.name}-{case.id}-{attempt}",
                    )
                    approval = approval_policy(self.suite.defaults.approve, workspace=workspace)
                    report = await run_in(
                        spec,
                        provider=provider,
                        sandbox=sandbox,
                        env=self.env,
                        on_event=on_event,
                        approval=approval,
                    )
                    result = report.result
                    human = case.verdict or self.verdicts.get(case.id)
                    scores = await score_case(
                        case, result, sandbox=sandbox, judge=provider, human_verdict=human
                    )
            except (DriverosError, OSError) as exc:
                return CaseResult(
                    suite=self.suite.name,
                    case_id=case.id,
                    outcome="setup_error",
                    passed=False,
                    attempts=attempt,
                    infra_error=f"{type(exc).__name__}: {exc}",
                    duration_ms=(time.perf_counter() - started) * 1000,
                    replay_mismatches=tuple(replay_log.mismatches),
                )
        if cassette is not None and self.options.mode == "record":
            await asyncio.to_thread(cassette.save, self.suite.cassette_path(case))
        await asyncio.to_thread(_write_events, events_file, events)
        infra = None
        if result.outcome in INFRA_OUTCOMES:
            infra = result.error or result.outcome
        return CaseResult(
            suite=self.suite.name,
            case_id=case.id,
            provider=provider.name,
            model=provider.model,
            outcome=result.outcome,
            exit_code=result.exit_code,
            answer=result.answer,
            verified=result.verified,
            passed=case_passed(case, result, scores) and infra is None,
            scores=tuple(scores),
            usage=result.usage,
            turns=result.turns,
            duration_ms=(time.perf_counter() - started) * 1000,
            attempts=attempt,
            infra_error=infra,
            replay_mismatches=tuple(replay_log.mismatches),
            events_file=str(events_file),
        )

    async def _provider_for(
        self,
        case: Case,
        replay_log: ReplayLog,
        stack: contextlib.AsyncExitStack,
        workspace: Path,
    ) -> tuple[Provider, Cassette | None]:
        """The provider for this mode, and the cassette it records into (record mode)."""
        mode = self.options.mode
        if mode == "replay":
            cassette = Cassette.load(self.suite.cassette_path(case))
            client = replay_client(
                cassette, replay_log, strict=self.options.strict_replay, workspace=str(workspace)
            )
            return _replay_provider(cassette, client), None
        if mode == "record":
            recorded = Cassette(provider="", model="", workspace=str(workspace))
            client = recording_client(recorded)
            if self.options.scripted:
                provider = await self._scripted_provider(case, client, stack)
            else:
                provider = self._live_provider(client)
            recorded.provider = provider.name
            recorded.model = provider.model
            # the Provider protocol has no base_url; the HTTP providers all do
            recorded.base_url = str(getattr(provider, "base_url", ""))
            return provider, recorded
        return self._live_provider(None), None

    async def _scripted_provider(
        self, case: Case, client: httpx.AsyncClient, stack: contextlib.AsyncExitStack
    ) -> Provider:
        from driveros.llm import openaicompat
        from driveros.testing import ScriptedModelServer, parse_turns

        if not case.scripted:
            raise ConfigError(f"case {case.id} has no scripted turns to record from")
        server = await stack.enter_async_context(ScriptedModelServer(parse_turns(case.scripted)))
        return openaicompat.openai(
            "scripted-model",
            api_key="scripted",
            base_url=server.openai_base_url,
            http_client=client,
        )


def _case_spec(case: Case, **fields: Any) -> RunSpec:
    try:
        return RunSpec(**fields)
    except ValidationError as exc:
        raise ConfigError(f"case {case.id}: invalid run settings: {exc}") from exc


def _write_events(path: Path, events: Sequence[Event]) -> None:
    # In the output directory, reached without following links (results in a repository).
    data = "".join(event.model_dump_json() + "\n" for event in events).encode("utf-8")
    root = path.parent.parent
    root.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data, perms=0o644, root=root)


def _load_partial(path: Path) -> dict[str, CaseResult]:
    done: dict[str, CaseResult] = {}
    data = read_bytes(path.parent, path.name) if path.parent.is_dir() else None
    if data is None:
        return done
    for line in data.decode("utf-8", "replace").split("\n"):
        try:
            result = CaseResult.model_validate(json.loads(line))
        except ValueError:
            continue
        if result.infra_error is None:
            done[result.case_id] = result
    return done


def _append_partial(path: Path, result: CaseResult) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    append(path.parent, path.name, (result.model_dump_json() + "\n").encode("utf-8"), perms=0o644)


async def run_suite(
    suite: Suite,
    options: EvalOptions,
    *,
    env: Environment,
    sandbox_factory: SandboxFactory | None = None,
    executor: Executor | None = None,
    on_case_done: Callable[[CaseResult, int, int], Awaitable[None]] | None = None,
    verdicts: dict[str, str] | None = None,
) -> EvalRun:
    """Run (or resume) ``suite`` and write ``results.json`` into ``options.output_dir``."""
    cases = [c for c in suite.cases if not options.only or c.id in options.only]
    unknown = set(options.only) - {c.id for c in suite.cases}
    if unknown:
        names = ", ".join(sorted(unknown))
        raise ConfigError(f"suite {suite.name!r} has no case named {names}")
    partial = options.output_dir / "results.partial.jsonl"
    done = await asyncio.to_thread(_load_partial, partial) if options.resume else {}
    if not options.resume and partial.parent.is_dir():
        await asyncio.to_thread(unlink, partial.parent, partial.name)
    todo = [c for c in cases if c.id not in done]
    runner = CaseRunner(suite, options, env=env, sandbox_factory=sandbox_factory, verdicts=verdicts)
    runner.spent = sum(r.usage.cost_usd or 0.0 for r in done.values())
    finished = len(cases) - len(todo)
    started = time.time()

    in_order = asyncio.Lock()  # one case at a time: its line in the file, then its count

    async def on_done(result: CaseResult) -> None:
        nonlocal finished
        async with in_order:
            finished += 1
            count = finished  # not re-read after an await: another case may finish meanwhile
            await asyncio.to_thread(_append_partial, partial, result)
            if on_case_done is not None:
                await on_case_done(result, count, len(cases))

    fresh = await (executor or LocalExecutor()).run(todo, runner, on_done)
    by_id = {**done, **{r.case_id: r for r in fresh}}
    ordered = tuple(by_id[c.id] for c in cases if c.id in by_id)
    first = next((r for r in ordered if r.provider), None)
    run = EvalRun(
        suite=suite.name,
        mode=options.mode,
        provider=first.provider if first else (options.provider or ""),
        model=first.model if first else (options.model or ""),
        started=started,
        finished=time.time(),
        cases=ordered,
    )
    out = options.output_dir / "results.json"
    data = (run.model_dump_json(indent=1) + "\n").encode("utf-8")
    await asyncio.to_thread(write_atomic, out, data, perms=0o644, root=options.output_dir)
    return run
