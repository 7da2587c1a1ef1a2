"""One ACP session's state (the agent in ``_server.py`` keeps one per ``session/new``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from driveros.acp._checkpoints import LastProposal
from driveros.acp._modes import ModeId
from driveros.acp._updates import Update
from driveros.llm import Message
from driveros.mcptools import McpServerConfig

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


@dataclass
class Session:
    id: str
    cwd: Path
    mode: ModeId
    #: The model conversation so far (passed back to the next run).
    history: list[Message] = field(default_factory=list)
    #: The last prompt's checkpoints and copy (``/checkpoints``, ``/revert N``).
    proposal: LastProposal = field(default_factory=LastProposal)
    #: Every update sent to the client (replayed by session/load).
    updates: list[Update] = field(default_factory=list)
    #: What the model must hear at the next prompt (rejected or unwritten edits).
    feedback: list[str] = field(default_factory=list)
    edits: Literal["allow", "reject"] | None = None
    rejecting_commands: bool = False
    task: asyncio.Task[StopReason] | None = None
    cancel_requested: bool = False
    #: Workspace files the client has (mentioned in a prompt, or written through it): each
    #: prompt reads them through fs/read_text_file, so the run sees their unsaved buffers.
    client_files: set[str] = field(default_factory=set)
    #: MCP servers from session/new (started per prompt, stopped with its run).
    mcp: list[McpServerConfig] = field(default_factory=list)
    #: The session's own commands were told (``available_commands_update``) since a prompt
    #: left checkpoints to list and revert.
    commands_told: bool = False
