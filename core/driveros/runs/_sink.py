"""A run's event sink (:func:`run_sink`) with what it masks, and the run's id."""

from __future__ import annotations

import asyncio
import uuid

from driveros.agent import (
    EventSink,
    OnEvent,
    Redactor,
    dotenv_secret_values,
    git_header_secret_values,
)
from driveros.config import Environment
from driveros.runs._options import RunSpec
from driveros.sandbox import dotenv_assignments


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


async def run_sink(spec: RunSpec, env: Environment, on_event: OnEvent | None) -> EventSink:
    """The run's event sink. The user's secret variables, every value of the workspace's
    .env* files (a key the real environment shadows too), the credentials of its folders'
    git headers and token shapes are masked in model input, events and memory."""
    dotenv = await asyncio.to_thread(dotenv_assignments, spec.workspace, recursive=True)
    roots = [spec.workspace, *(d.path for d in spec.add_dirs)]
    headers = await asyncio.to_thread(git_header_secret_values, roots)
    redactor = Redactor([*env.secret_values(), *dotenv_secret_values(dotenv), *headers])
    return EventSink(spec.run_id or new_run_id(), on_event, redactor)
