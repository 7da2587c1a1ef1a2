"""Starting a run: ``execute_run`` (the CLI, the language server, ACP) and ``run_in`` (a
provider and sandbox the caller owns: an eval case).

Both redact every event through one :class:`EventSink`, attach the diagnostics feed and
memory the spec asks for, run the :class:`Agent`, and end with exactly one ``result`` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from driveros._errors import ConfigError, DriverosError
from driveros._together import all_of
from driveros.agent import (
    EXIT_CODES,
    Agent,
    AgentConfig,
    AgentRun,
    AgentWiring,
    ApprovalPolicy,
    Asker,
    CheckpointInfo,
    Event,
    EventSink,
    ExtraTool,
    OnEvent,
    Proposal,
    ProposalFile,
    Result,
    RunStarted,
    approval_policy,
)
from driveros.config import Environment
from driveros.diagnostics import DiagnosticItem
from driveros.hooks import HookSet, gate, watching
from driveros.llm import Message, Provider
from driveros.runs._buffers import ReadBuffer, buffer_hook
from driveros.runs._conventions import run_hooks, traced, with_instructions
from driveros.runs._oneshot import one_shot_sandbox, too_broad
from driveros.runs._options import RunSpec
from driveros.runs._provider import make_provider
from driveros.runs._sandbox import (
    SandboxStart,
    folder_views,
    git_binds,
    make_sandbox,
    read_only_in_place,
    run_approval,
    run_tier,
)
from driveros.runs._sink import new_run_id, run_sink
from driveros.runs._wiring import FeedParts, diagnostics_feed, feed_cache, open_memory
from driveros.sandbox import Sandbox

if TYPE_CHECKING:
    from driveros.review import FileChange, FolderViews, ScratchWorkspace


@dataclass(frozen=True)
class RunReport:
    """The outcome of :func:`execute_run`."""

    #: The ``result`` event (already delivered through ``on_event``).
    result: Result
    #: The conversation without the system prompt: pass it back to resume with feedback.
    history: list[Message]
    #: The proposed file changes when the run worked on a scratch copy.
    changes: list[FileChange] = field(default_factory=list)
    #: The scratch copy (caller applies, commits, discards and closes it), or None.
    scratch: ScratchWorkspace | None = None
    #: The views of the writable added folders (``--add-dir DIR:rw``), owned like ``scratch``;
    #: their changes are in ``changes`` by absolute path.
    folders: FolderViews | None = None


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


@dataclass(frozen=True)
class RunContext:
    """What a caller of :func:`execute_run` brings to one run besides its spec (each optional):
    one parameter object from there down to the agent."""

    #: The conversation so far (resuming with feedback), without the system prompt.
    history: Sequence[Message] | None = None
    #: A review run's scratch copy to continue (None: made from the spec).
    scratch: ScratchWorkspace | None = None
    approval: ApprovalPolicy | None = None
    asker: Asker | None = None
    config: AgentConfig | None = None
    extra_tools: Sequence[ExtraTool] = ()
    buffers: ReadBuffer | None = None
    #: The user's hooks (execute_run reads them for the run's workspace).
    hooks: HookSet | None = None
    #: A review run's views of its writable added folders to continue (a resumed held run).
    folders: FolderViews | None = None


@dataclass(frozen=True)
class _ToolGates:
    """What every tool call waits for: the run's start (sandbox, baseline) and, per file, the
    editor's buffer adopted into the scratch copy."""

    ready: Callable[[], Awaitable[None]] | None = None
    before_file: Callable[[str], Awaitable[None]] | None = None


class _WiredAgent:
    """The agent over an open provider and sandbox, wired to the spec's diagnostics feed and
    memory and to the context's history, tools, hooks and checkpoints."""

    def __init__(self, context: RunContext) -> None:
        self.context = context
        self.agent: Agent | None = None
        #: A review run's copy: a checkpoint after every turn that changed it.
        self.scratch: ScratchWorkspace | None = None
        #: A review run's views of its writable added folders (checkpointed with it).
        self.folders: FolderViews | None = context.folders

    async def checkpoint(self, turn: int, tools: list[str]) -> CheckpointInfo | None:
        from driveros.review import checkpoints_of

        assert self.scratch is not None
        # A folder's checkpoints are found by their turn (docs/review.md, "Checkpoints").
        more = await self.folders.record(turn, tools) if self.folders else []
        cp = await checkpoints_of(self.scratch).record(turn, tools, always=bool(more))
        if cp is None:
            return None
        info = CheckpointInfo(**cp.model_dump(include={"checkpoint", "turn", "files"}))
        return info.model_copy(update={"files": [*info.files, *more]}) if more else info

    async def run(
        self,
        spec: RunSpec,
        *,
        provider: Provider,
        sandbox: Sandbox,
        policy: ApprovalPolicy,
        env: Environment,
        sink: EventSink,
        stack: contextlib.AsyncExitStack,
        gates: _ToolGates,
    ) -> AgentRun:
        context = self.context
        if context.hooks is not None:  # the user's pre_tool hooks before any decision
            policy = gate(policy, context.hooks, run_id=sink.run_id)
        feed = (
            await diagnostics_feed(spec, sandbox, policy, sink, await feed_cache(sandbox, stack))
            if spec.diagnostics
            else FeedParts()
        )
        memory = await open_memory(spec, env, provider, sink)
        if memory is not None:
            closer = getattr(memory, "aclose", None)
            if closer is not None:
                stack.push_async_callback(closer)
        own = (context.config or AgentConfig()).model_copy(update=_config_update(spec))
        self.agent = Agent(
            provider,
            sandbox,
            config=await with_instructions(spec, env, sink, own),
            approval=policy,
            wiring=AgentWiring(
                extra_detectors=feed.detectors,
                diagnostics=feed.source,
                targets_judge=feed.judge,
                memory=memory,
                targets=spec.targets,
                sink=sink,
                extra_tools=context.extra_tools,
                before_file=gates.before_file,
                tools_ready=gates.ready,
                checkpoint=self.checkpoint if self.scratch is not None else None,
            ),
        )
        if feed.attach is not None:  # the feed may ask the servers the model's tools start
            feed.attach(self.agent.semantic)
        return await self.agent.run(spec.task, history=context.history, emit_result=False)

    async def canceled(self, sink: EventSink) -> None:
        """The ``canceled`` result, with what the run had done so far."""
        partial = self.agent.partial_result if self.agent is not None else None
        fields = partial.model_dump(exclude={"run_id", "seq", "ts", "type"}) if partial else {}
        fields.update(outcome="canceled", exit_code=EXIT_CODES["canceled"], error="canceled")
        await sink.emit(Result, **fields)


def _all_ready(*waits: Callable[[], Awaitable[None]] | None) -> Callable[[], Awaitable[None]]:
    """What the tools wait for: every one of ``waits``, side by side (each starts its work
    when it has not started yet: a sandbox and a baseline are made at once). The first error,
    in that order, is raised once all are done."""

    async def ready() -> None:
        await all_of(*(w() for w in waits if w is not None))

    return ready


async def _fail(spec: RunSpec, sink: EventSink, exc: Exception) -> RunReport:
    if not sink.emitted:
        await sink.emit(RunStarted, task=spec.task, workspace=str(spec.workspace))
    result = await sink.emit(
        Result, outcome="setup_error", exit_code=EXIT_CODES["setup_error"], error=str(exc)
    )
    return RunReport(result=result, history=[])


async def _finish(sink: EventSink, run: AgentRun) -> Result:
    fields = run.result.model_dump(exclude={"run_id", "seq", "ts", "type"})
    return await sink.emit(Result, **fields)


async def execute_run(
    spec: RunSpec,
    *,
    env: Environment,
    on_event: OnEvent,
    context: RunContext | None = None,
) -> RunReport:
    """Run ``spec`` to one outcome. Setup problems end as a ``setup_error`` result.

    Builds the provider, the (scratch) workspace, the sandbox, the diagnostics feed and
    memory from the spec. ``context`` is what the caller brings (:class:`RunContext`, every
    field optional). With ``spec.review`` the agent works on ``context.scratch`` (created from
    ``spec.workspace`` with ``spec.overlays`` when None); the report carries the scratch copy
    and its changes, and the caller owns it from then on. Cancelling the task emits a
    ``canceled`` result after the tools are stopped and the sandbox is closed, then re-raises.

    ``context.approval`` replaces the policy built from ``spec.approve``; ``context.asker`` is
    who ``approve="ask"`` asks (default: the terminal). The policy is built per run, in the
    run's tier (:func:`run_tier`). ``context.history`` continues a conversation;
    ``context.extra_tools`` (e.g. an MCP server's, opened by the caller around the run) are
    offered next to the built-in tools, each call approved. ``context.buffers`` (a review run
    only) reads the editor's text of a file: the first time the agent reads, edits or writes
    a path, that text is adopted into the scratch copy (:class:`ReadBuffer`).
    """
    # Reading every .env of the workspace (for the redactor) is a walk of the whole tree:
    # it runs while the scratch copy is made, and nothing is emitted before it is done.
    after_first_request = _AfterFirstRequest()
    hooks = await run_hooks(spec, env)
    on_event = await traced(spec, env, on_event)
    sink_ready = asyncio.ensure_future(
        run_sink(spec, env, after_first_request.watching(watching(on_event, hooks)))
    )
    context = dataclasses.replace(context or RunContext(), hooks=hooks)
    try:
        return await _execute(spec, context, env, sink_ready, after_first_request)
    finally:
        if not sink_ready.done():
            sink_ready.cancel()  # only on an error outside the run's own handling


class _AfterFirstRequest:
    """Starts a run's background work (a review run's deferred baseline, a local sandbox)
    once its first model request is on its way (the run's first ``turn_started``, a moment
    after): it then never competes with the start of the run, and it is done long before a
    real model's first answer. Whatever waits for that work first starts it itself."""

    #: How long after the first ``turn_started`` (the request is being sent meanwhile).
    DELAY_S = 0.05

    def __init__(self) -> None:
        self.pending: list[Callable[[], object]] = []

    def watching(self, on_event: OnEvent) -> OnEvent:
        async def watch(event: Event) -> None:
            if self.pending and event.type == "turn_started":
                loop = asyncio.get_running_loop()
                for start in self.pending:
                    loop.call_later(self.DELAY_S, start)
                self.pending = []
            await on_event(event)

        return watch


async def _execute(
    spec: RunSpec,
    context: RunContext,
    env: Environment,
    sink_ready: asyncio.Future[EventSink],
    after_first_request: _AfterFirstRequest,
) -> RunReport:
    scratch = context.scratch
    if spec.overlays and not spec.review:
        exc = ConfigError("overlays need a review run (review=True)")
        return await _fail(spec, await sink_ready, exc)
    if (wide := await asyncio.to_thread(too_broad, spec.workspace, env)) is not None:
        exc = ConfigError(f"no run over {spec.workspace}: {wide}; open a project directory")
        return await _fail(spec, await sink_ready, exc)
    try:
        provider = make_provider(spec, env)
    except ConfigError as exc:
        return await _fail(spec, await sink_ready, exc)
    owns_scratch = False
    wired = _WiredAgent(context)
    sink: EventSink | None = None
    try:
        async with contextlib.AsyncExitStack() as stack:
            stack.push_async_callback(provider.aclose)
            root = spec.workspace
            if spec.review:
                if scratch is None:
                    from driveros.review import ScratchWorkspace

                    # The docker tier mounts a view where its runtime can (never the .git for
                    # an untrusted run), else a worktree/copy: see docs/scratch.md.
                    runtime = "runsc" if spec.untrusted else spec.runtime
                    scratch = await ScratchWorkspace.create(
                        spec.workspace,
                        overlays=spec.overlays,
                        container=runtime if spec.sandbox == "docker" else None,
                        hide_git=spec.untrusted,
                        # The agent's tools wait for it (tools_ready), its first request not.
                        defer_baseline=True,
                    )
                    owns_scratch = True
                    after_first_request.pending.append(scratch.start_baseline)
                wired.folders = await folder_views(spec, wired.folders, after_first_request.pending)
                sink = await sink_ready
                root = scratch.path
                wired.scratch = scratch
                started: dict[str, object] = {"scratch": scratch.strategy}
                if scratch.fallback_reason:
                    started["scratch_fallback"] = scratch.fallback_reason
                if scratch.left_out:
                    started["left_out"] = list(scratch.left_out)
                sink.extra_fields[RunStarted] = started
            else:
                sink = await sink_ready
            views = wired.folders.roots if wired.folders else None
            git = await git_binds(spec, scratch, wired.folders)
            sandbox, workspace_in_sandbox = make_sandbox(
                spec, root, env, scratch, views, discard_writes=read_only_in_place(spec), git=git
            )
            stack.push_async_callback(sandbox.aclose)
            # A container starts at once (it takes a while); a local sandbox once the first
            # request is on its way. The tools wait for either.
            at_once = spec.sandbox == "docker"
            starting = SandboxStart(sandbox, now=at_once)
            if not at_once:
                after_first_request.pending.append(starting.start)
            stack.push_async_callback(starting.aclose)
            policy = context.approval or run_approval(
                spec, workspace_in_sandbox, views, context.asker
            )
            buffers = context.buffers
            gates = _ToolGates(
                ready=_all_ready(
                    starting.wait,
                    scratch.baseline_recorded if scratch is not None else None,
                    wired.folders.baseline_recorded if wired.folders else None,
                ),
                before_file=buffer_hook(scratch, buffers, known=spec.overlays)
                if buffers is not None and scratch is not None
                else None,
            )
            run = await starting.racing(
                wired.run(
                    spec,
                    provider=provider,
                    sandbox=sandbox,
                    policy=policy,
                    env=env,
                    sink=sink,
                    stack=stack,
                    gates=gates,
                )
            )
        changes: list[FileChange] = []
        if scratch is not None:
            changes = await scratch.changes()
            if wired.folders:
                changes += await wired.folders.changes()
            if changes:
                files = [_proposal_file(c) for c in changes]
                await sink.emit(Proposal, files=files, rationale=run.result.answer)
        result = await _finish(sink, run)
        return RunReport(
            result=result,
            history=run.history,
            changes=changes,
            scratch=scratch,
            folders=wired.folders,
        )
    except asyncio.CancelledError:
        if owns_scratch and scratch is not None:
            await scratch.aclose()
        if wired.folders:
            await wired.folders.aclose()
        # Canceled before the walk ended: the result still goes out, masked as always.
        if sink is None:
            sink = await asyncio.shield(sink_ready)
        await wired.canceled(sink)
        raise
    except DriverosError as exc:  # setup: scratch copy, sandbox, runtime, review
        if owns_scratch and scratch is not None:
            await scratch.aclose()
        if wired.folders:
            await wired.folders.aclose()
        return await _fail(spec, sink if sink is not None else await sink_ready, exc)


async def run_in(
    spec: RunSpec,
    *,
    provider: Provider,
    sandbox: Sandbox,
    env: Environment,
    on_event: OnEvent,
    approval: ApprovalPolicy,
) -> RunReport:
    """Run ``spec`` with a provider and a started sandbox that the caller opened and closes
    (an eval case: a recording or replaying provider, a sandbox it scores in afterwards).

    The feed, memory, budgets and events are those of :func:`execute_run`; setup errors
    raise (the caller owns the setup). Cancelling emits a ``canceled`` result and re-raises.
    """
    sink = await run_sink(spec, env, on_event)
    wired = _WiredAgent(RunContext())
    try:
        async with contextlib.AsyncExitStack() as stack:
            run = await wired.run(
                spec,
                provider=provider,
                sandbox=sandbox,
                policy=approval,
                env=env,
                sink=sink,
                stack=stack,
                gates=_ToolGates(),
            )
    except asyncio.CancelledError:
        await wired.canceled(sink)
        raise
    return RunReport(result=await _finish(sink, run), history=run.history)


async def current_errors(
    spec: RunSpec, env: Environment, *, paths: Sequence[str] = ()
) -> tuple[list[DiagnosticItem], tuple[str, ...], int]:
    """The build's errors now (the diagnostics feed run once in ``spec``'s tier on the user's
    workspace), the checks that ran and how many errors lie outside ``paths``; with ``paths``
    (workspace-relative files or folders) only the errors in them. ``driveros agent --fix``
    takes these as the run's targets."""
    # Its events go nowhere: no redactor to build (that reads every .env in the workspace).
    sink = EventSink(new_run_id())
    async with contextlib.AsyncExitStack() as stack:
        # The repository's code runs here (a conftest.py, a declared test command): never
        # with write access to the user's tree.
        sandbox, workspace_in_sandbox = await one_shot_sandbox(spec, env, stack)
        policy = approval_policy(spec.approve, workspace=workspace_in_sandbox, tier=run_tier(spec))
        found = await diagnostics_feed(
            spec, sandbox, policy, sink, await feed_cache(sandbox, stack)
        )
        assert found.source is not None
        snapshot = await found.source.snapshot()
    wanted = [p.strip("/") for p in paths if p.strip("/") not in ("", ".")]

    def inside(path: str) -> bool:
        path = path.removeprefix("./")
        return not wanted or any(path == w or path.startswith(w + "/") for w in wanted)

    errors = [d for d in snapshot.items if d.severity == "error" and inside(d.path)]
    elsewhere = sum(d.severity == "error" and not inside(d.path) for d in snapshot.items)
    return errors, snapshot.checks, elsewhere


def _proposal_file(change: FileChange) -> ProposalFile:
    return ProposalFile(
        path=change.path, action=change.action, old_path=change.old_path, diff=change.diff
    )
