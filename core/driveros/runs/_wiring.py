"""What a run attaches to the agent: the build-diagnostics feed (driveros.intel) and memory."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from driveros._errors import DriverosError
from driveros._tmp import temp_root
from driveros.agent import (
    Approval,
    ApprovalPolicy,
    ApprovalRequest,
    Build,
    BuildCheck,
    DiagnosticsSource,
    EventSink,
    MemoryEvent,
    MemoryHook,
    StuckDetector,
    TargetsJudge,
)
from driveros.config import Environment
from driveros.diagnostics import targets_fixed
from driveros.llm import Provider
from driveros.runs._conventions import agents_md_checks
from driveros.runs._options import RunSpec
from driveros.sandbox import Sandbox
from driveros.semantic import SemanticTools

if TYPE_CHECKING:
    from driveros.intel import WorkspaceConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FeedParts:
    """What the diagnostics feed gives a run: the source of its snapshots, its stuck detector
    and target matching (all empty when the run has no feed)."""

    source: DiagnosticsSource | None = None
    detectors: list[StuckDetector] = field(default_factory=list)
    judge: TargetsJudge | None = None
    #: Hands the run's semantic tools to the feed: their warm servers may answer for a check.
    attach: Callable[[SemanticTools], None] | None = None


async def feed_cache(sandbox: Sandbox, stack: contextlib.AsyncExitStack) -> str | None:
    """A cache directory for the feed's tools that goes with the run (registered in the
    state directory, so a killed run's is collected later), or None: the feed's default in
    the sandbox's own temp directory, which goes with it. Every tier's commands run in a
    sandbox that sees only its own temp directory (a container's; the local tier's private
    TMPDIR, removed by ``aclose()`` and by the watchdog), so it is always None now."""
    if sandbox.tier in ("local", "docker"):
        return None
    from driveros.state import Lease, new_lease_id, remove_paths

    lease_id = new_lease_id()
    tmp = await asyncio.to_thread(lambda: temp_root().resolve())  # never a silent fall back
    path = tmp / f"driveros-intel-{lease_id}"
    try:
        lease = await Lease.create("cache", paths=[path], lease_id=lease_id)
    except OSError:  # no usable state directory: still removed at the end of the run
        stack.push_async_callback(remove_paths, [str(path)])
    else:
        stack.push_async_callback(lease.release)
    return str(path)


async def diagnostics_feed(
    spec: RunSpec,
    sandbox: Sandbox,
    approval: ApprovalPolicy,
    sink: EventSink,
    cache_dir: str | None = None,
) -> FeedParts:
    """The build-diagnostics feed, its stuck detector and target matching (driveros.intel).

    The workspace's own checks come only from a trusted workspace, read now from the user's
    tree (never from the copy the agent writes to), and each of their commands goes through
    the run's approval policy like a ``run`` call (docs/security.md,
    "Attacks and how each is prevented", its first two).
    """
    from driveros import intel

    found = intel.WorkspaceConfig()
    if spec.workspace_trusted:
        found = await asyncio.to_thread(intel.read_workspace_config, spec.workspace)
        found = await _with_agents_md_checks(found, spec)
    elif await asyncio.to_thread(intel.has_workspace_config, spec.workspace):
        log.warning(
            "%s: the workspace's diagnostics configuration is not used: the workspace is not "
            "trusted (driveros trust)",
            spec.workspace,
        )

    async def approve(check: intel.CheckSpec, command: str) -> tuple[bool, str]:
        decision = await approval.decide(
            ApprovalRequest(tool="run", arguments={"command": command})
        )
        if decision.asked:
            label = "approved" if decision.allowed else "denied"
        else:
            label = "allowed" if decision.allowed else "blocked"
        await sink.emit(
            Approval,
            turn=0,
            call_id=f"check:{check.name}",
            name="diagnostics",
            decision=label,
            reason=f"custom check {check.name!r}: {decision.reason}",
            asked=decision.asked,
            answered_by=decision.answered_by,
            scope=decision.scope,
        )
        return decision.allowed, decision.reason

    async def on_build(build: intel.BuildPlan, failed: tuple[str, ...]) -> None:
        # the detected build, with where each check came from (docs/events.md)
        checks = [
            BuildCheck(name=c.name, kind=c.kind, origin=c.origin, command=c.command)
            for c in build.checks
        ]
        await sink.emit(Build, checks=checks, not_run=list(build.notes), failed=list(failed))

    feed = intel.DiagnosticsFeed(
        sandbox,
        config=found.config,
        options=intel.FeedOptions(
            on_build=on_build,
            # past the test budget, the tests of the files the task and its targets name run
            focus=[*(t.path for t in spec.targets), *intel.task_paths(spec.task)],
            approve=approve,
            config_problem=found.problem,
            config_origin=found.origin or ".driveros.toml",
            cache_dir=cache_dir,
        ),
    )
    return FeedParts(
        source=feed,
        detectors=[intel.BuildDiagnosticsDetector(targets=spec.targets)],
        judge=targets_fixed,
        attach=feed.use_language_servers,
    )


async def _with_agents_md_checks(found: WorkspaceConfig, spec: RunSpec) -> WorkspaceConfig:
    """A trusted workspace's configuration plus its AGENTS.md "checks" as custom checks
    (docs/extending.md); a check of the same name in the configuration wins."""
    from driveros.intel import CheckSpec

    listed = await asyncio.to_thread(agents_md_checks, spec.workspace)
    if not listed:
        return found
    config = found.config
    names = {c.name for c in config.checks}
    extra = tuple(
        CheckSpec(name=name, command=command, parser=parser, origin="AGENTS.md:checks")
        for name, command, parser in listed
        if name not in names
    )
    config = config.model_copy(update={"checks": (*config.checks, *extra)})
    return found.model_copy(update={"config": config})


async def open_memory(
    spec: RunSpec, env: Environment, provider: Provider, sink: EventSink
) -> MemoryHook | None:
    """The run's long-term memory (``spec.memory``); None, with a ``memory`` error event,
    when it cannot be opened (the run goes on without it)."""
    if not spec.memory:
        return None
    try:
        from driveros.memory import open_agent_memory

        # the run's redactor already holds the secret values: no second walk for .env files
        memory = await open_agent_memory(
            spec.workspace, env, provider, secrets=sink.redactor.secrets
        )
    except (DriverosError, OSError, ImportError) as exc:
        await sink.emit(MemoryEvent, action="error", detail=f"memory unavailable: {exc}")
        return None
    for notice in memory.memory.notices:  # a database the repository carries: never read
        await sink.emit(MemoryEvent, action="skipped", detail=notice)
    return memory
