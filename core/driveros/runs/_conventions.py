"""What a run takes from the user's and the repository's conventions (driveros.conventions):
the instruction files in the system prompt, and a trusted workspace's AGENTS.md "checks"."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from driveros._errors import ConfigError
from driveros._paths import user_config_dir
from driveros.agent import AgentConfig, EventSink, OnEvent, RunStarted
from driveros.config import Environment
from driveros.conventions import Instructions, checks_section, load_instructions
from driveros.hooks import HookSet, load_hooks
from driveros.runs._added import folders_prompt
from driveros.runs._options import RunSpec

log = logging.getLogger(__name__)

#: The parser of a check whose command starts with one of these words; others use "gnu".
_PARSERS = {"pytest": "pytest", "mypy": "mypy", "pyright": "pyright", "tsc": "tsc"}


def user_dir(env: Environment) -> Path:
    """The user's driveros config directory (``$XDG_CONFIG_HOME/driveros``)."""
    return user_config_dir(env.process_env or None)


async def with_instructions(
    spec: RunSpec, env: Environment, sink: EventSink, config: AgentConfig
) -> AgentConfig:
    """``config`` with the run's instruction files after its system prompt, listed in the
    ``run_started`` event. Text only: they change nothing else of the run."""
    found: Instructions = await asyncio.to_thread(
        load_instructions,
        spec.workspace,
        user_dir=user_dir(env),
        task=spec.task,
        paths=[t.path for t in spec.targets],
    )
    prompt = config.system_prompt
    if spec.add_dirs:
        prompt = f"{prompt}\n\n{folders_prompt(spec.add_dirs)}"
    if found.files:
        sink.extra_fields.setdefault(RunStarted, {})["instructions"] = found.listing()
        prompt = f"{prompt}\n\n{found.prompt()}"
    if prompt == config.system_prompt:
        return config
    return config.model_copy(update={"system_prompt": prompt})


def agents_md_checks(workspace: Path) -> list[tuple[str, str, str]]:
    """A trusted workspace's AGENTS.md "checks" commands: (name, command, parser) each. The
    caller makes them custom checks of the feed, each command approved like a ``run`` call."""
    found = load_instructions(workspace, user_dir=None)
    checks: list[tuple[str, str, str]] = []
    for file in found.files:
        if file.path != "AGENTS.md":
            continue
        for index, command in enumerate(checks_section(file.text), start=1):
            words = command.replace("python -m ", "").split()
            parser = _PARSERS.get(words[0], "gnu") if words else "gnu"
            checks.append((f"agents-md-{index}", command, parser))
    return checks


async def run_hooks(spec: RunSpec, env: Environment) -> HookSet:
    """The user's hooks and, in a trusted workspace, the workspace's; each notice (a file
    ignored or broken) is logged."""
    found = await asyncio.to_thread(
        load_hooks, spec.workspace, user_dir=user_dir(env), trusted=spec.workspace_trusted
    )
    for notice in found.notices:
        log.warning("hooks: %s", notice)
    return found


async def traced(spec: RunSpec, env: Environment, on_event: OnEvent) -> OnEvent:
    """``on_event``, exporting the run's spans when ``spec.otel`` or the real environment's
    ``OTEL_*`` variables ask for it (driveros.otel imports the SDK only then). Without the
    ``driveros[otel]`` extra the run goes on untraced, with a warning."""
    from driveros.otel import otel_wanted

    environ = env.process_env
    if not otel_wanted(environ, flag=spec.otel):
        return on_event
    from driveros.otel import with_otel

    try:
        return await with_otel(on_event, environ)
    except ConfigError as exc:
        log.warning("%s", exc)
        return on_event
