"""The agent: think → act → observe over sandbox tools, with one typed event stream.

    run = await Agent(provider, sandbox, on_event=print_event).run("fix the failing test")

``Agent`` takes any provider and sandbox. Runs as a user starts them (provider choice, the
scratch copy, the sandbox tier, the diagnostics feed, memory) are built in driveros.runs.
"""

from driveros._tool_names import READ_ONLY_TOOLS, TOOL_NAMES
from driveros.agent._approval import (
    ApprovalPolicy,
    ApprovalRequest,
    ApproveMode,
    Asker,
    Decision,
    Tier,
    approval_policy,
)
from driveros.agent._events import (
    EVENT_TYPES,
    EXIT_CODES,
    Approval,
    Build,
    BuildCheck,
    Checkpoint,
    CheckpointInfo,
    Compaction,
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
    ToolLocation,
    ToolResult,
    TurnFinished,
    TurnStarted,
    event_adapter,
    event_json_schema,
)
from driveros.agent._hooks import (
    DiagnosticsSource,
    MemoryHook,
    StuckDetector,
    StuckVerdict,
    ToolObservation,
    TurnObservation,
)
from driveros.agent._loop import Agent
from driveros.agent._redact import (
    RedactingFilter,
    Redactor,
    dotenv_secret_values,
    git_header_secret_values,
)
from driveros.agent._sink import EventSink, OnEvent
from driveros.agent._state import AgentConfig, AgentRun, TargetsJudge
from driveros.agent._stuck import (
    CycleDetector,
    FailingCallDetector,
    RepeatedCallDetector,
    RepeatedErrorDetector,
    RepeatedTextDetector,
    default_detectors,
)
from driveros.agent._tools import ExtraTool, ExtraToolCall, tool_specs
from driveros.agent._wiring import AgentWiring

__all__ = [
    "EVENT_TYPES",
    "EXIT_CODES",
    "READ_ONLY_TOOLS",
    "TOOL_NAMES",
    "Agent",
    "AgentConfig",
    "AgentRun",
    "AgentWiring",
    "Approval",
    "ApprovalPolicy",
    "ApprovalRequest",
    "ApproveMode",
    "Asker",
    "Build",
    "BuildCheck",
    "Checkpoint",
    "CheckpointInfo",
    "Compaction",
    "CycleDetector",
    "Decision",
    "Diagnostics",
    "DiagnosticsSource",
    "Edit",
    "Event",
    "EventSink",
    "ExtraTool",
    "ExtraToolCall",
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
    "RunStarted",
    "Stuck",
    "StuckDetector",
    "StuckVerdict",
    "TargetsJudge",
    "Text",
    "Thinking",
    "Tier",
    "ToolCall",
    "ToolLocation",
    "ToolObservation",
    "ToolResult",
    "TurnFinished",
    "TurnObservation",
    "TurnStarted",
    "approval_policy",
    "default_detectors",
    "dotenv_secret_values",
    "event_adapter",
    "event_json_schema",
    "git_header_secret_values",
    "tool_specs",
]
