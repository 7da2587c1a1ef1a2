"""Helpers for agent tests: a fixture repository and a runner over the scripted model."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests._scripted import Wire, model_environ
from tests._scripted import calc_repo as calc_repo  # the fixture, for these tests

from driveros.agent import Event
from driveros.config import load_environment
from driveros.llm import Message
from driveros.runs import RunContext, RunReport, RunSpec, execute_run
from driveros.testing import ScriptedModelServer, Turn

SECRET = "sk-live-abcdefghijklmnop1234"


def sandbox_env() -> dict[str, str]:
    """What commands in a test sandbox see: the venv's tools first on PATH."""
    bin_dir = str(Path(sys.executable).parent)
    return {
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": "/tmp",
        # pytest runs inside the sandbox start much faster without the venv's plugins
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }


def environ_for(server: ScriptedModelServer, wire: Wire, **extra: str) -> dict[str, str]:
    return sandbox_env() | model_environ(server, wire, SECRET) | extra


@dataclass
class Outcome:
    report: RunReport
    events: list[Event]
    server: ScriptedModelServer

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]


async def run_scripted(
    turns: Sequence[Turn],
    workspace: Path,
    *,
    wire: Wire = "openai",
    history: Sequence[Message] | None = None,
    environ: dict[str, str] | None = None,
    **spec: Any,
) -> Outcome:
    """Run the agent end to end against a scripted model speaking ``wire``."""
    events: list[Event] = []

    async def on_event(event: Event) -> None:
        events.append(event)

    spec.setdefault("diagnostics", False)
    config = spec.pop("config", None)
    async with ScriptedModelServer(turns) as server:
        env = load_environment(cwd=workspace, environ=environ_for(server, wire, **(environ or {})))
        report = await execute_run(
            RunSpec(task=spec.pop("task", "fix the failing test"), workspace=workspace, **spec),
            env=env,
            on_event=on_event,
            context=RunContext(history=history, config=config),
        )
    return Outcome(report, events, server)
