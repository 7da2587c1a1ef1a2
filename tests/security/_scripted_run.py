"""One whole run against a scripted model, for the tests that look at what leaves it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from driveros.agent import Event
from driveros.config import load_environment
from driveros.runs import RunReport, RunSpec, execute_run
from driveros.testing import ScriptedModelServer, Turn
from tests._scripted import model_environ


@dataclass
class Seen:
    """A run's report, its events, and every request the model was sent (as JSON)."""

    report: RunReport
    events: list[Event]
    sent: str

    @property
    def trace(self) -> str:
        return "\n".join(e.model_dump_json() for e in self.events)


async def scripted_run(turns: list[Turn], spec: RunSpec, key: str) -> Seen:
    """Run ``spec`` with ``turns`` as the model (OpenAI wire, API key ``key``)."""
    events: list[Event] = []

    async def on_event(event: Event) -> None:
        events.append(event)

    async with ScriptedModelServer(turns) as server:
        environ = {"PATH": os.environ["PATH"], **model_environ(server, "openai", key)}
        env = load_environment(cwd=spec.workspace, environ=environ)
        report = await execute_run(spec, env=env, on_event=on_event)
        sent = json.dumps(server.requests)
    return Seen(report, events, sent)
