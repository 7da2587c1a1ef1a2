"""The agent: think → act → observe over sandbox tools, with one typed event stream.

    report = await execute_run(RunSpec(task="fix the failing test", workspace=Path(".")),
                               env=load_environment(), on_event=print_event)

``Agent`` is the loop underneath for direct use with any provider and sandbox.
"""

from driveros.agent._approval import (
    ApprovalPolicy,
    ApprovalRequest,
    ApproveMode,
    Decision,
    approval_policy,
)
from driveros.agent._events import (
    EVENT_TYPES,
    EXIT_CODES,
    Approval,
    DiagnosticItem,
    Diagnostics,
    Edit,
    Event,
    MemoryEvent,
    Outcome,
    Proposal,
    ProposalFile,
    Result,
    RunStarted,
    Stuck,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    TurnFinished,
    TurnStarted,
    event_adapter,
    event_json_schema,
)
from driveros.agent._hooks import (
    DiagnosticsSnapshot,
    DiagnosticsSource,
    MemoryHook,
    StuckDetector,
    StuckVerdict,
    ToolObservation,
    TurnObservation,
)
from driveros.agent._loop import Agent
from driveros.agent._redact import RedactingFilter, Redactor
from driveros.agent._run import RunReport, RunSpec, execute_run, new_run_id, pick_provider
from driveros.agent._sink import EventSink, OnEvent
from driveros.agent._state import AgentConfig, AgentRun
from driveros.agent._stuck import (
    CycleDetector,
    FailingCallDetector,
    RepeatedCallDetector,
    RepeatedErrorDetector,
    RepeatedTextDetector,
    default_detectors,
)
from driveros.agent._tools import READ_ONLY_TOOLS, TOOL_NAMES, tool_specs

__all__ = [
    "EVENT_TYPES",
    "EXIT_CODES",
    "READ_ONLY_TOOLS",
    "TOOL_NAMES",
    "Agent",
    "AgentConfig",
    "AgentRun",
    "Approval",
    "ApprovalPolicy",
    "ApprovalRequest",
    "ApproveMode",
    "CycleDetector",
    "Decision",
    "DiagnosticItem",
    "Diagnostics",
    "DiagnosticsSnapshot",
    "DiagnosticsSource",
    "Edit",
    "Event",
    "EventSink",
    "FailingCallDetector",
    "MemoryEvent",
    "MemoryHook",
    "OnEvent",
    "Outcome",
    "Proposal",
    "ProposalFile",
    "RedactingFilter",
    "Redactor",
    "RepeatedCallDetector",
    "RepeatedErrorDetector",
    "RepeatedTextDetector",
    "Result",
    "RunReport",
    "RunSpec",
    "RunStarted",
    "Stuck",
    "StuckDetector",
    "StuckVerdict",
    "Text",
    "Thinking",
    "ToolCall",
    "ToolObservation",
    "ToolResult",
    "TurnFinished",
    "TurnObservation",
    "TurnStarted",
    "approval_policy",
    "default_detectors",
    "event_adapter",
    "event_json_schema",
    "execute_run",
    "new_run_id",
    "pick_provider",
    "tool_specs",
]
