"""The seam between the server and the agent: one :class:`Runner` call per run (or resume).

The server builds a :class:`RunRequest` (task, workspace, settings, unsaved buffers, target
diagnostics) and awaits ``runner(request, on_event=..., resume=...)``. The runner streams
events through ``on_event`` and returns a :class:`RunOutcome`: the final ``result`` event,
the changes of its scratch copy and an opaque ``state`` the server hands back to resume the
run with review feedback. Canceling the awaiting task must stop everything the run started.

:class:`AgentRunner` is the production runner over ``driveros.runs.execute_run``; tests
inject their own. The run stack is imported lazily so ``initialize`` stays fast.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from driveros_lsp._settings import Settings

if TYPE_CHECKING:
    from driveros.agent import Event, Result

logger = logging.getLogger(__name__)

EventSink = Callable[[Any], None]
"""Receives every ``driveros.agent`` event of a run, in order (never blocks)."""


class FileChangeLike(Protocol):
    """What the server reads from one change of the scratch copy (driveros.review.FileChange)."""

    @property
    def path(self) -> str: ...
    @property
    def action(self) -> str: ...
    @property
    def old_path(self) -> str | None: ...
    @property
    def before(self) -> str | None: ...
    @property
    def after(self) -> str | None: ...
    @property
    def binary(self) -> bool: ...
    @property
    def diff(self) -> str: ...


class RunRequest(BaseModel):
    """Everything a runner needs to start (or resume) one run."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    task: str
    workspace: str
    #: The run's name for the user (their own task, or the fix's first diagnostic): never the
    #: prompt driveros built around it. Empty: the task's first line.
    title: str = ""
    settings: Settings = Field(default_factory=Settings)
    #: Unsaved editor buffers, workspace-relative path -> text.
    overlays: dict[str, str] = Field(default_factory=dict)
    #: Target diagnostics, each shaped like ``driveros.agent.DiagnosticItem`` (plain dicts
    #: here so that importing this module does not import the agent).
    targets: list[dict[str, Any]] = Field(default_factory=list)
    #: Folders added to the run, writable, besides ``workspace`` (absolute paths: the other
    #: workspace folders a task names); never configuration, whatever their trust.
    folders: list[str] = Field(default_factory=list)
    #: The user trusts the workspace (decided by ``_trust.WorkspaceTrust`` as the run starts).
    trusted: bool = False
    #: Who approval ``ask`` asks (a ``driveros.approval.Asker``, the editor); None:
    #: nobody can be asked and ``ask`` runs as ``policy``.
    asker: Any = Field(default=None, exclude=True, repr=False)
    #: Reads the editor's unsaved buffer of a path (a ``driveros.runs.ReadBuffer``,
    #: ``_buffers.EditorBuffers``); None: only ``overlays``.
    buffers: Any = Field(default=None, exclude=True, repr=False)

    @property
    def label(self) -> str:
        """The run's name for the user, on one line."""
        text = self.title or self.task.strip().split("\n", 1)[0]
        return " ".join(text.split())


class RunUsage(BaseModel):
    """What a run cost: dollars (None while unknown) and cached vs all input tokens. The
    defaults are a run without usage (restored, or still going)."""

    model_config = ConfigDict(frozen=True)

    cost_usd: float | None = None
    cost_unknown: bool = False
    input_tokens: int = 0
    cached_tokens: int = 0


class RunResult(RunUsage):
    """What the server reads of a run's ``result`` event (``driveros.agent.Result``).

    The runner builds it with :meth:`of` as the run ends; a proposal restored from a kept
    scratch copy has only what its manifest recorded (no usage). A typed summary, so that
    the server reads typed fields, not attributes of an untyped event, and does not
    import the agent before the first run.
    """

    outcome: str | None = None
    answer: str = ""
    error: str | None = None

    @classmethod
    def of(cls, result: Result) -> RunResult:
        usage = result.usage
        return cls(
            outcome=result.outcome,
            answer=result.answer,
            error=result.error,
            cost_usd=usage.cost_usd,
            cost_unknown=usage.cost_unknown,
            input_tokens=usage.input_tokens,
            cached_tokens=usage.cache_read_tokens,
        )


class RunOutcome(BaseModel):
    """What a finished run left behind."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    #: What the server reads of the run's ``result`` event.
    result: RunResult = Field(default_factory=RunResult)
    #: The scratch copy's changes, each shaped like :class:`FileChangeLike`.
    changes: Sequence[Any] = ()
    rationale: str = ""
    #: Opaque, handed back as ``resume`` to continue the run (history, scratch copy).
    state: Any = None
    #: Removes the scratch copy for good (kept or not); called once the proposal is settled,
    #: and at server exit for a proposal that is not kept.
    release: Callable[[], Awaitable[None]] | None = None
    #: Keeps the scratch copy past this process with a JSON manifest (a proposal that must
    #: survive a restart); None when the copy cannot be kept.
    keep: Callable[[dict[str, Any]], Awaitable[None]] | None = None
    #: Lets go of a kept scratch copy at server exit: unmounted, its changes left on disk for
    #: the next process (which mounts it again); None when there is no copy.
    let_go: Callable[[], Awaitable[None]] | None = None
    #: The council's verdict on the proposal (``council`` setting), or ``{"error": ...}``.
    council: dict[str, Any] | None = None
    #: The run's turns so far, all its parts: a follow-up's turns are numbered after them.
    turns: int = 0
    #: The views of the run's writable added folders (``driveros.review.FolderViews``), handed
    #: back to a follow-up; released and let go with the scratch copy.
    folders: Any = None


class RestoredRun(BaseModel):
    """A proposal kept by an earlier server, reopened: its manifest and its outcome."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    manifest: dict[str, Any]
    outcome: RunOutcome
    kept_at: float


class Runner(Protocol):
    def __call__(
        self, request: RunRequest, *, on_event: EventSink, resume: RunOutcome | None
    ) -> Awaitable[RunOutcome]: ...


@runtime_checkable
class Restorer(Protocol):
    """A runner that can also reopen the proposals earlier servers kept (AgentRunner)."""

    def restore(self, workspace: str) -> Coroutine[Any, Any, list[RestoredRun]]: ...


_RUN_MODULES = (
    "driveros.agent",
    "driveros.llm",
    "driveros.llm.openaicompat",
    "driveros.llm.anthropic",
    "driveros.review",
    "driveros.sandbox",
    "driveros.intel",
    "driveros.council",
    "httpx",
)


def _warm_imports(memory: bool) -> None:
    import importlib
    import importlib.util

    for name in (*_RUN_MODULES, *(("driveros.memory",) if memory else ())):
        try:
            if importlib.util.find_spec(name) is not None:
                importlib.import_module(name)
        except ImportError:  # an optional part that is not installed
            continue


def _no_ask(mode: str) -> Literal["policy", "never"]:
    return "never" if mode == "never" else "policy"


class AgentRunner:
    """The production runner: ``driveros.runs.execute_run`` on a scratch copy (review mode)."""

    async def __call__(
        self, request: RunRequest, *, on_event: EventSink, resume: RunOutcome | None
    ) -> RunOutcome:
        from pathlib import Path

        # The first run imports the agent and everything it loads lazily (the LLM stack, the
        # sandbox, the diagnostics feed): do that off the event loop, once.
        await asyncio.to_thread(_warm_imports, request.settings.memory)
        from driveros.config import load_environment
        from driveros.runs import AddedDir, RunContext, execute_run, pick_provider

        root = Path(request.workspace)
        env = await asyncio.to_thread(load_environment, cwd=root, trusted=request.trusted)
        for warning in env.warnings:  # stderr: the editor's server log
            logger.warning("%s", warning)
        s = request.settings
        added = await asyncio.to_thread(lambda: [Path(f).resolve() for f in request.folders])
        # the settings are run options (driveros.runs.RunOptions) plus the editor's own
        spec = s.spec(
            task=request.task,
            workspace=root,
            # never the terminal: no asker (a client without message actions) is "policy"
            approve="ask" if request.asker is not None else _no_ask(s.approval),
            ask_timeout_s=s.approval_timeout_s,
            review=True,
            # a follow-up's copy has the buffers of its start; the editor has what it has now
            overlays=dict(request.overlays) if resume is None else {},
            targets=list(request.targets),
            run_id=request.run_id,
            workspace_trusted=env.workspace_trusted,
            add_dirs=[AddedDir(path=f, writable=True) for f in added],
            # DRIVEROS_DIAGNOSTICS=off holds for every front end
            diagnostics=s.diagnostics and env.diagnostics_on,
        )

        history, scratch = resume.state if resume is not None else (None, None)
        prior = resume.turns if resume is not None else 0
        if scratch is not None:  # a follow-up's checkpoints record the run's turn numbers
            from driveros.review import checkpoints_of

            checkpoints_of(scratch).turn_offset = prior

        async def deliver(event: Event) -> None:
            on_event(_continued(event, prior))

        report = await execute_run(
            spec,
            env=env,
            on_event=deliver,
            context=RunContext(
                history=history,
                scratch=scratch,
                asker=request.asker,
                buffers=request.buffers,
                folders=resume.folders if resume is not None else None,
            ),
        )
        turns = prior + report.result.turns
        release, keep = _scratch_handles(report.scratch, report.history, turns=turns)
        council = None
        if s.council and report.changes:
            from driveros.review import combined_patch
            from driveros_lsp._council import council_review

            diff = combined_patch(report.changes)
            author = pick_provider(env, s.provider)
            council = await council_review(env, diff=diff, task=request.task, author=author)
        outcome = RunOutcome(
            council=council,
            result=RunResult.of(report.result),
            changes=list(report.changes),
            rationale=report.result.answer,
            state=(report.history, report.scratch),
            release=release,
            keep=keep,
            let_go=_let_go(report.scratch),
            turns=turns,
        )
        if report.folders:  # the added folders' views go with the scratch copy
            outcome = _with_folders(outcome, report.folders, request.run_id)
        return outcome

    async def restore(self, workspace: str) -> list[RestoredRun]:
        """The proposals kept by earlier servers for ``workspace``, reopened (oldest first)."""
        from pathlib import Path

        from driveros.review import checkpoints_of, reopen_kept_where

        def proposal(manifest: Mapping[str, Any]) -> bool:
            # not a run held by the CLI, nor another proposal's added folder
            return manifest.get("kind") != "run" and FOLDER_OF not in manifest

        restored: list[RestoredRun] = []
        for kept in await reopen_kept_where(proposal, workspace=Path(workspace)):
            scratch, manifest = kept.scratch, kept.manifest
            # the proposal's checkpoints go on, and so do its turns
            marks = checkpoints_of(scratch, manifest).records
            turns = _whole(manifest.get("turns"), max((c.turn for c in marks), default=0))
            changes = await scratch.changes()
            release, keep = _scratch_handles(scratch, turns=turns)
            result = RunResult(
                outcome=_text(manifest.get("outcome")) or None,
                answer=_text(manifest.get("rationale")),
            )
            outcome = RunOutcome(
                result=result,
                changes=list(changes),
                rationale=result.answer,
                state=(_history(manifest.get("history")), scratch),
                release=release,
                keep=keep,
                let_go=_let_go(scratch),
                turns=turns,
            )
            folders = await _reopen_folders(manifest, str(manifest.get("runId") or ""))
            if folders:
                more = await folders.changes()
                outcome = outcome.model_copy(update={"changes": [*outcome.changes, *more]})
                outcome = _with_folders(outcome, folders, str(manifest.get("runId") or ""))
            restored.append(RestoredRun(manifest=manifest, outcome=outcome, kept_at=kept.kept_at))
        return restored


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _whole(value: Any, default: int) -> int:
    """A manifest's count (a non-negative int), else ``default``."""
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return value if ok else default


def _continued(event: Event, prior: int) -> Event:
    """``event`` numbered in the whole run: a follow-up's turns go on after the ``prior``
    turns of the run (its checkpoints record them so already: ``Checkpoints.turn_offset``)."""
    if prior <= 0 or event.type == "checkpoint":
        return event
    turn = event.model_dump(include={"turn"}).get("turn")
    if not isinstance(turn, int) or turn <= 0:  # no turn, or 0: not in one (a check's approval)
        return event
    return event.model_copy(update={"turn": turn + prior})


Release = Callable[[], Awaitable[None]]
Keep = Callable[[dict[str, Any]], Awaitable[None]]


def _history(raw: Any) -> list[Any] | None:
    """A kept proposal's conversation (a follow-up after a restart continues it), or None."""
    from pydantic import TypeAdapter, ValidationError

    from driveros.llm import Message

    try:
        return TypeAdapter(list[Message]).validate_python(raw) if raw else None
    except ValidationError:
        return None


def _scratch_handles(
    scratch: Any, history: Sequence[Any] = (), *, turns: int = 0
) -> tuple[Release | None, Keep | None]:
    """``(release, keep)`` of a scratch copy: release removes it for good (also once kept);
    keep records its checkpoints, the run's conversation and its turns with the manifest."""
    if scratch is None:
        return None, None

    async def release() -> None:
        await scratch.discard()

    async def keep(manifest: dict[str, Any]) -> None:
        from pydantic import TypeAdapter

        from driveros.llm import Message
        from driveros.review import checkpoints_of

        talk = TypeAdapter(list[Message]).dump_python(list(history), mode="json")
        entry = checkpoints_of(scratch).manifest_entry()
        await scratch.keep({**manifest, **entry, "history": talk, "turns": turns})

    return release, keep


#: A kept proposal's added folder view names its run so (and is never a proposal itself).
FOLDER_OF = "folderOf"


def _with_folders(outcome: RunOutcome, folders: Any, run_id: str) -> RunOutcome:
    """``outcome`` whose release, keep and let-go also cover its added folders' views: kept,
    each view is kept beside the proposal (its manifest names the run) and the proposal's
    manifest lists the folders, so that a restart reopens them together."""
    from driveros.review import checkpoints_of

    release, keep, let_go = outcome.release, outcome.keep, outcome.let_go

    async def release_both() -> None:
        try:
            if release is not None:
                await release()
        finally:
            await folders.discard()

    async def keep_both(manifest: dict[str, Any]) -> None:
        if keep is None:
            return
        for at, view in folders.views.items():
            entry = checkpoints_of(view).manifest_entry()
            await view.keep({FOLDER_OF: run_id, "folder": str(at), **entry})
        await keep({**manifest, "folders": [str(at) for at in folders.views]})

    async def let_go_both() -> None:
        try:
            if let_go is not None:
                await let_go()
        finally:
            await folders.aclose()  # a kept view stays on disk for the next server

    return outcome.model_copy(
        update={
            "folders": folders,
            "release": release_both,
            "keep": keep_both if keep is not None else None,
            "let_go": let_go_both,
        }
    )


async def _reopen_folders(manifest: Mapping[str, Any], run_id: str) -> Any:
    """The added folders' views a kept proposal listed, reopened (None without any)."""
    from pathlib import Path

    from driveros.review import FolderViews, checkpoints_of, reopen_kept_where

    listed = manifest.get("folders")
    if not isinstance(listed, list) or not listed:
        return None
    views = {}
    for folder in (str(f) for f in listed):

        def this_one(kept: Mapping[str, Any], folder: str = folder) -> bool:
            return kept.get(FOLDER_OF) == run_id and kept.get("folder") == folder

        found = await reopen_kept_where(this_one, workspace=Path(folder))
        for kept in found:
            checkpoints_of(kept.scratch, kept.manifest)
            views[Path(folder)] = kept.scratch
    return FolderViews(views) if views else None


def _let_go(scratch: Any) -> Release | None:
    """Closes this process's hold on a scratch copy: a kept one is unmounted and stays on
    disk (``ScratchWorkspace.aclose``)."""
    return None if scratch is None else scratch.aclose
