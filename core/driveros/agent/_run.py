"""The run API shared by ``driveros agent`` and the language server.

``execute_run(spec, env=..., on_event=...)`` builds the provider, the (scratch) workspace, the
sandbox, the diagnostics feed and memory from a :class:`RunSpec`, runs the :class:`Agent`, and
returns a :class:`RunReport`. Every event goes through ``on_event`` (redacted); the last one
is always the ``result``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from driveros._errors import ConfigError, DriverosError
from driveros.agent import _events as ev
from driveros.agent._approval import (
    ApprovalPolicy,
    ApprovalRequest,
    ApproveMode,
    Asker,
    Tier,
    approval_policy,
)
from driveros.agent._hooks import DiagnosticsSource, MemoryHook, StuckDetector
from driveros.agent._loop import Agent
from driveros.agent._redact import Redactor, dotenv_secret_values
from driveros.agent._sink import EventSink, OnEvent
from driveros.agent._state import AgentConfig, TargetsJudge
from driveros.agent._tools import ExtraTool
from driveros.config import KEY_VARS, PROVIDER_ORDER, Environment
from driveros.diagnostics import DiagnosticItem, targets_fixed
from driveros.llm import Message, Provider
from driveros.sandbox import DockerSandbox, LocalSandbox, Sandbox, dotenv_assignments

if TYPE_CHECKING:
    from driveros.review import FileChange, ScratchWorkspace

log = logging.getLogger(__name__)

#: Where DockerSandbox mounts the workspace (docs/sandbox.md): the root its commands see.
DOCKER_WORKSPACE = "/workspace"
#: Where a review run's git directory is mounted read-only in the container (docs/review.md).
DOCKER_GIT_DIR = "/driveros/git"


class RunSpec(BaseModel):
    """Everything that defines one agent run (the CLI flags and the LSP commands map here)."""

    model_config = ConfigDict(frozen=True)

    task: str
    workspace: Path
    #: None picks the first configured provider in ``driveros.config.PROVIDER_ORDER``.
    provider: str | None = None
    model: str | None = None
    sandbox: Literal["local", "docker"] = "local"
    runtime: Literal["runc", "runsc"] = "runc"
    untrusted: bool = False
    network: bool = False
    memory: bool = False
    max_iterations: int = Field(default=30, ge=1)
    max_wall_s: float = Field(default=900.0, gt=0)
    #: US dollars the run may spend (None: no cap); see ``AgentConfig.max_cost_usd``.
    max_cost_usd: float | None = Field(default=None, gt=0)
    #: Estimated prompt tokens a request may carry (None: follow the model's context window).
    max_context_tokens: int | None = Field(default=None, ge=1000)
    #: Seconds the provider may stay silent before the first byte of an answer / in the middle
    #: of one before the run ends ``provider_error`` (None: the provider's default, 60 s).
    first_byte_timeout_s: float | None = Field(default=None, gt=0)
    idle_timeout_s: float | None = Field(default=None, gt=0)
    approve: ApproveMode = "policy"
    #: ``approve="ask"``: seconds to wait for an answer before it counts as a denial.
    ask_timeout_s: float = Field(default=300.0, gt=0)
    #: Work on a scratch copy (driveros.review) and propose the changes instead of writing.
    review: bool = False
    #: Unsaved editor buffers: workspace-relative path -> text (needs ``review``).
    overlays: dict[str, str] = Field(default_factory=dict)
    #: Diagnostics the task should make disappear (a fix task).
    targets: list[DiagnosticItem] = Field(default_factory=list)
    run_id: str | None = None
    #: Attach the build-diagnostics feed (driveros.intel): snapshots after edit turns.
    diagnostics: bool = True
    #: Globs the user exempts from the secret-file deny list (docs/sandbox.md, "Secret files").
    allow_secret_files: list[str] = Field(default_factory=list)
    #: The user trusts this workspace (``driveros trust``, ``--trust``): its own diagnostics
    #: checks are read from ``workspace`` at start and run through ``approve`` (docs/security.md).
    workspace_trusted: bool = False


@dataclass(frozen=True)
class RunReport:
    """The outcome of :func:`execute_run`."""

    #: The ``result`` event (already delivered through ``on_event``).
    result: ev.Result
    #: The conversation without the system prompt: pass it back to resume with feedback.
    history: list[Message]
    #: The proposed file changes when the run worked on a scratch copy.
    changes: list[FileChange] = field(default_factory=list)
    #: The scratch copy (caller applies, commits, discards and closes it), or None.
    scratch: ScratchWorkspace | None = None


def _config_update(spec: RunSpec) -> dict[str, object]:
    """The spec's budgets over the agent config (an unset cap keeps the config's own)."""
    update: dict[str, object] = {
        "max_iterations": spec.max_iterations,
        "max_wall_s": spec.max_wall_s,
    }
    if spec.max_cost_usd is not None:
        update["max_cost_usd"] = spec.max_cost_usd
    if spec.max_context_tokens is not None:
        update["context_budget"] = spec.max_context_tokens
    return update


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def pick_provider(env: Environment, name: str | None) -> str:
    """The provider to use: ``name``, or the first configured one in PROVIDER_ORDER."""
    if name is not None:
        env.provider(name)  # validates the name
        return name
    for candidate in PROVIDER_ORDER:
        settings = env.provider(candidate)
        if settings.api_key is not None or (candidate == "ollama" and settings.base_url):
            return candidate
    wanted = ", ".join(v for v in KEY_VARS.values() if v)
    raise ConfigError(f"no model provider is configured: set one of {wanted}, or OLLAMA_HOST")


def run_tier(spec: RunSpec) -> Tier:
    """The tier the run's commands execute in (the approval policy decides by it)."""
    docker = spec.sandbox == "docker"
    return Tier(
        sandbox=spec.sandbox,
        runtime=spec.runtime if docker else None,
        network=spec.network if docker else True,
        scratch=spec.review,
    )


def docker_git(
    spec: RunSpec, scratch: ScratchWorkspace | None
) -> tuple[dict[str, str], dict[str, str]]:
    """Read-only mounts and environment that let git work on a scratch worktree in docker.

    Never for untrusted runs: the git directory may hold credentials (``.git/config``).
    """
    if scratch is None or spec.untrusted:
        return {}, {}
    git = scratch.container_git(git_at=DOCKER_GIT_DIR, work_tree=DOCKER_WORKSPACE)
    return ({}, {}) if git is None else (git.mounts, git.env)


async def _open_sandbox(
    spec: RunSpec, root: Path, env: Environment, scratch: ScratchWorkspace | None = None
) -> tuple[Sandbox, str]:
    """The started sandbox and the workspace root as its commands see it."""
    box: LocalSandbox | DockerSandbox
    if spec.sandbox == "docker":
        mounts, git_env = docker_git(spec, scratch)
        box = DockerSandbox(
            root,
            runtime=spec.runtime,
            untrusted=spec.untrusted,
            network=spec.network,
            base_env=env.process_env,
            extra_env=git_env,
            private_copy=scratch is not None,
            extra_mounts={src: dst for src, dst in mounts.items()},
            allow_secret_files=spec.allow_secret_files,
        )
        seen_as = DOCKER_WORKSPACE
    else:
        box = LocalSandbox(
            root, base_env=env.process_env, allow_secret_files=spec.allow_secret_files
        )
        seen_as = str(root)
    try:
        await box.start()
    except BaseException:
        await box.aclose()
        raise
    return box, seen_as


@dataclass(frozen=True)
class _Intel:
    feed: DiagnosticsSource | None = None
    detectors: list[StuckDetector] = field(default_factory=list)
    judge: TargetsJudge | None = None


async def _feed_cache(sandbox: Sandbox, stack: contextlib.AsyncExitStack) -> str | None:
    """A cache directory for the feed's tools that goes with the run (registered in the
    state directory, so a killed run's is collected later). None for a container, whose
    own temp directory goes with it."""
    if sandbox.tier != "local":
        return None
    import tempfile

    from driveros.state import Lease, new_lease_id, remove_paths

    lease_id = new_lease_id()
    tmp = await asyncio.to_thread(lambda: Path(tempfile.gettempdir()).resolve())
    path = tmp / f"driveros-intel-{lease_id}"
    try:
        lease = await Lease.create("cache", paths=[path], lease_id=lease_id)
    except OSError:  # no usable state directory: still removed at the end of the run
        stack.push_async_callback(remove_paths, [str(path)])
    else:
        stack.push_async_callback(lease.release)
    return str(path)


async def _intel_for(
    spec: RunSpec,
    sandbox: Sandbox,
    approval: ApprovalPolicy,
    sink: EventSink,
    cache_dir: str | None = None,
) -> _Intel:
    """The build-diagnostics feed, its stuck detector and target matching (driveros.intel).

    The workspace's own checks come only from a trusted workspace, read now from the user's
    tree (never from the copy the agent writes to), and each of their commands goes through
    the run's approval policy like a ``run`` call (docs/security.md, rows 1 and 2).
    """
    from driveros import intel

    found = intel.WorkspaceConfig()
    if spec.workspace_trusted:
        found = await asyncio.to_thread(intel.read_workspace_config, spec.workspace)
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
            ev.Approval,
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

    feed = intel.DiagnosticsFeed(
        sandbox,
        config=found.config,
        approve=approve,
        config_problem=found.problem,
        config_origin=found.origin or ".driveros.toml",
        cache_dir=cache_dir,
    )
    return _Intel(
        feed=feed,
        detectors=[intel.BuildDiagnosticsDetector(targets=spec.targets)],
        judge=targets_fixed,
    )


async def current_errors(
    spec: RunSpec, env: Environment, *, paths: Sequence[str] = ()
) -> tuple[list[DiagnosticItem], tuple[str, ...], int]:
    """The build's errors now (the diagnostics feed run once in ``spec``'s tier on the user's
    workspace), the checks that ran and how many errors lie outside ``paths``; with ``paths``
    (workspace-relative files or folders) only the errors in them. ``driveros agent --fix``
    takes these as the run's targets."""
    dotenv = await asyncio.to_thread(dotenv_assignments, spec.workspace, recursive=True)
    sink = EventSink(
        new_run_id(), None, Redactor([*env.secret_values(), *dotenv_secret_values(dotenv)])
    )
    async with contextlib.AsyncExitStack() as stack:
        sandbox, seen_as = await _open_sandbox(spec, spec.workspace, env)
        stack.push_async_callback(sandbox.aclose)
        policy = approval_policy(spec.approve, workspace=seen_as, tier=run_tier(spec))
        found = await _intel_for(spec, sandbox, policy, sink, await _feed_cache(sandbox, stack))
        assert found.feed is not None
        snapshot = await found.feed.snapshot()
    wanted = [p.strip("/") for p in paths if p.strip("/") not in ("", ".")]

    def inside(path: str) -> bool:
        path = path.removeprefix("./")
        return not wanted or any(path == w or path.startswith(w + "/") for w in wanted)

    errors = [d for d in snapshot.items if d.severity == "error" and inside(d.path)]
    elsewhere = sum(d.severity == "error" and not inside(d.path) for d in snapshot.items)
    return errors, snapshot.checks, elsewhere


async def _open_memory(
    spec: RunSpec, env: Environment, provider: Provider, sink: EventSink
) -> MemoryHook | None:
    if not spec.memory:
        return None
    try:
        from driveros.memory import open_agent_memory

        return await open_agent_memory(spec.workspace, env, provider)
    except (DriverosError, OSError, ImportError) as exc:
        await sink.emit(ev.MemoryEvent, action="error", detail=f"memory unavailable: {exc}")
        return None


async def _fail(spec: RunSpec, sink: EventSink, exc: Exception) -> RunReport:
    if not sink.emitted:
        await sink.emit(ev.RunStarted, task=spec.task, workspace=str(spec.workspace))
    result = await sink.emit(
        ev.Result, outcome="setup_error", exit_code=ev.EXIT_CODES["setup_error"], error=str(exc)
    )
    return RunReport(result=result, history=[])


async def execute_run(
    spec: RunSpec,
    *,
    env: Environment,
    on_event: OnEvent,
    history: Sequence[Message] | None = None,
    scratch: ScratchWorkspace | None = None,
    approval: ApprovalPolicy | None = None,
    asker: Asker | None = None,
    config: AgentConfig | None = None,
    extra_tools: Sequence[ExtraTool] = (),
) -> RunReport:
    """Run ``spec`` to one outcome. Setup problems end as a ``setup_error`` result.

    With ``spec.review`` the agent works on ``scratch`` (created from ``spec.workspace`` with
    ``spec.overlays`` when None); the report carries the scratch copy and its changes, and
    the caller owns it from then on. Cancelling the task emits a ``canceled`` result after
    the tools are stopped and the sandbox is closed, then re-raises.

    ``approval`` replaces the policy built from ``spec.approve``; ``asker`` is who
    ``approve="ask"`` asks (default: the terminal). The policy is built per run, in the
    run's tier (:func:`run_tier`). ``extra_tools`` (e.g. an MCP server's, opened by the
    caller around the run) are offered next to the built-in tools, each call approved.
    """
    # The user's secret variables, every value of the workspace's .env* files (a key the real
    # environment shadows too) and token shapes: masked in model input, events and memory.
    dotenv = await asyncio.to_thread(dotenv_assignments, spec.workspace, recursive=True)
    redactor = Redactor([*env.secret_values(), *dotenv_secret_values(dotenv)])
    sink = EventSink(spec.run_id or new_run_id(), on_event, redactor)
    if spec.overlays and not spec.review:
        return await _fail(spec, sink, ConfigError("overlays need a review run (review=True)"))
    try:
        provider = _make_provider(spec, env)
    except ConfigError as exc:
        return await _fail(spec, sink, exc)
    owns_scratch = False
    agent: Agent | None = None
    try:
        async with contextlib.AsyncExitStack() as stack:
            stack.push_async_callback(provider.aclose)
            root = spec.workspace
            if spec.review:
                if scratch is None:
                    from driveros.review import ScratchWorkspace

                    # The docker tier does not mount overlay views yet (and a view would show
                    # the user's .git to the container): it keeps the worktree/copy.
                    scratch = await ScratchWorkspace.create(
                        spec.workspace,
                        overlays=spec.overlays,
                        strategy="worktree" if spec.sandbox == "docker" else None,
                    )
                    owns_scratch = True
                root = scratch.path
                started: dict[str, object] = {"scratch": scratch.strategy}
                if scratch.fallback_reason:
                    started["scratch_fallback"] = scratch.fallback_reason
                if scratch.left_out:
                    started["left_out"] = list(scratch.left_out)
                sink.extra_fields[ev.RunStarted] = started
            sandbox, seen_as = await _open_sandbox(spec, root, env, scratch)
            stack.push_async_callback(sandbox.aclose)
            policy = approval or approval_policy(
                spec.approve,
                workspace=seen_as,
                tier=run_tier(spec),
                asker=asker,
                timeout=spec.ask_timeout_s,
            )
            found = (
                await _intel_for(spec, sandbox, policy, sink, await _feed_cache(sandbox, stack))
                if spec.diagnostics
                else _Intel()
            )
            memory = await _open_memory(spec, env, provider, sink)
            if memory is not None:
                closer = getattr(memory, "aclose", None)
                if closer is not None:
                    stack.push_async_callback(closer)
            agent = Agent(
                provider,
                sandbox,
                config=(config or AgentConfig()).model_copy(update=_config_update(spec)),
                approval=policy,
                extra_detectors=found.detectors,
                diagnostics=found.feed,
                targets_judge=found.judge,
                memory=memory,
                targets=spec.targets,
                sink=sink,
                extra_tools=extra_tools,
            )
            run = await agent.run(spec.task, history=history, emit_result=False)
        changes: list[FileChange] = []
        if scratch is not None:
            changes = await scratch.changes()
            if changes:
                files = [_proposal_file(c) for c in changes]
                await sink.emit(ev.Proposal, files=files, rationale=run.result.answer)
        fields = run.result.model_dump(exclude={"run_id", "seq", "ts", "type"})
        result = await sink.emit(ev.Result, **fields)
        return RunReport(result=result, history=run.history, changes=changes, scratch=scratch)
    except asyncio.CancelledError:
        if owns_scratch and scratch is not None:
            await scratch.aclose()
        partial = agent.partial_result if agent is not None else None
        fields = partial.model_dump(exclude={"run_id", "seq", "ts", "type"}) if partial else {}
        fields.update(outcome="canceled", exit_code=ev.EXIT_CODES["canceled"], error="canceled")
        await sink.emit(ev.Result, **fields)
        raise
    except DriverosError as exc:  # setup: scratch copy, sandbox, runtime, review
        if owns_scratch and scratch is not None:
            await scratch.aclose()
        return await _fail(spec, sink, exc)


def _make_provider(spec: RunSpec, env: Environment) -> Provider:
    from driveros.llm import provider_from_env

    name = pick_provider(env, spec.provider)
    stalls = {"first_byte_timeout": spec.first_byte_timeout_s, "idle_timeout": spec.idle_timeout_s}
    options: dict[str, Any] = {key: value for key, value in stalls.items() if value is not None}
    return provider_from_env(name, env, model=spec.model, **options)


def _proposal_file(change: FileChange) -> ev.ProposalFile:
    return ev.ProposalFile(
        path=change.path, action=change.action, old_path=change.old_path, diff=change.diff
    )
