"""What a run attaches to an :class:`~driveros.agent.Agent` beyond its provider and sandbox:
one parameter object instead of a dozen keyword arguments."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from driveros.agent import _events as ev
from driveros.agent._hooks import DiagnosticsSource, MemoryHook, StuckDetector
from driveros.agent._sink import EventSink
from driveros.agent._state import TargetsJudge
from driveros.agent._tools import BeforeFile, ExtraTool
from driveros.diagnostics import DiagnosticItem


@dataclass(frozen=True)
class AgentWiring:
    """The run's parts an agent uses; every one is optional."""

    #: The stuck detectors (None: the defaults), and more to run after them.
    detectors: Sequence[StuckDetector] | None = None
    extra_detectors: Sequence[StuckDetector] = ()
    #: The build's diagnostics after each edit (driveros.intel's feed).
    diagnostics: DiagnosticsSource | None = None
    memory: MemoryHook | None = None
    #: Values masked in model input, events and memory (with no ``sink``).
    secrets: Sequence[str] = ()
    #: Diagnostics the task must make disappear, and who judges that they did.
    targets: Sequence[DiagnosticItem] = ()
    targets_judge: TargetsJudge | None = None
    #: The run's id (with no ``sink``), or the sink every event goes through.
    run_id: str | None = None
    sink: EventSink | None = None
    #: Tools offered next to the built-in ones (an MCP server's), each call approved.
    extra_tools: Sequence[ExtraTool] = ()
    #: Awaited before a tool reads, edits or writes a path (an editor buffer adopted first).
    before_file: BeforeFile | None = None
    #: What every tool call waits for first (the sandbox and the baseline started).
    tools_ready: Callable[[], Awaitable[None]] | None = None
    #: Records the scratch copy after a turn that ran tools (a review run's checkpoints).
    checkpoint: Callable[[int, list[str]], Awaitable[ev.CheckpointInfo | None]] | None = None
