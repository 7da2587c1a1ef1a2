"""Where a run is started: the layer above the agent, the feed (driveros.intel) and memory.

    report = await execute_run(RunSpec(task="fix the failing test", workspace=Path(".")),
                               env=load_environment(), on_event=print_event)

:class:`RunOptions` are the knobs a user sets (provider, tier, limits: defined here once; the
language server's settings derive from them), :class:`RunSpec` one run. :func:`execute_run`
chooses the provider, lays out the (scratch) workspace, the sandbox and its mounts, wires the
diagnostics feed and memory, and owns the run's lifecycle; the CLI, the language server,
``driveros acp``, the issue bot and the evals (:func:`run_in`) all start runs here.

Only the option models (:class:`RunOptions`, :class:`HeadlessOptions`, :class:`RunSpec`) are
imported eagerly (the language server reads them at start); the rest loads the agent stack on
first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from driveros.runs._added import AddedDir, secret_files
from driveros.runs._options import HeadlessOptions, RunOptions, RunSpec

if TYPE_CHECKING:
    from driveros.runs._buffers import ReadBuffer
    from driveros.runs._execute import (
        RunContext,
        RunReport,
        current_errors,
        execute_run,
        run_in,
    )
    from driveros.runs._held import (
        HeldRun,
        fork_held,
        held_runs,
        hold_folders,
        hold_run,
        open_held,
        take_held,
    )
    from driveros.runs._provider import make_provider, pick_provider
    from driveros.runs._sandbox import DOCKER_GIT_DIR, DOCKER_WORKSPACE, docker_git, run_tier
    from driveros.runs._sink import new_run_id

__all__ = [
    "DOCKER_GIT_DIR",
    "DOCKER_WORKSPACE",
    "AddedDir",
    "HeadlessOptions",
    "HeldRun",
    "ReadBuffer",
    "RunContext",
    "RunOptions",
    "RunReport",
    "RunSpec",
    "current_errors",
    "docker_git",
    "execute_run",
    "fork_held",
    "held_runs",
    "hold_folders",
    "hold_run",
    "make_provider",
    "new_run_id",
    "open_held",
    "pick_provider",
    "run_in",
    "run_tier",
    "secret_files",
    "take_held",
]

_LAZY = {
    "ReadBuffer": "_buffers",
    "RunContext": "_execute",
    "RunReport": "_execute",
    "current_errors": "_execute",
    "execute_run": "_execute",
    "new_run_id": "_sink",
    "run_in": "_execute",
    "HeldRun": "_held",
    "fork_held": "_held",
    "held_runs": "_held",
    "hold_folders": "_held",
    "take_held": "_held",
    "hold_run": "_held",
    "open_held": "_held",
    "make_provider": "_provider",
    "pick_provider": "_provider",
    "DOCKER_GIT_DIR": "_sandbox",
    "DOCKER_WORKSPACE": "_sandbox",
    "docker_git": "_sandbox",
    "run_tier": "_sandbox",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
