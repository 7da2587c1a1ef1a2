"""The sandbox the diagnostics feed runs in once over the user's own tree (``driveros agent
--fix`` finding its targets, the language server's ``publishDiagnostics``): its commands
cannot change the tree (docs/security.md, "The feed run once on your tree changes nothing").
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from driveros._paths import user_home
from driveros.config import Environment
from driveros.runs._options import RunSpec
from driveros.runs._sandbox import make_sandbox
from driveros.sandbox import PolicyError, Sandbox
from driveros.state import state_dir
from driveros.trust import broad_root


async def one_shot_sandbox(
    spec: RunSpec, env: Environment, stack: contextlib.AsyncExitStack
) -> tuple[Sandbox, str]:
    """A started sandbox over ``spec.workspace`` that only reads it, closed with ``stack``,
    and the workspace root as its commands see it. The local tier discards its commands'
    writes (a throwaway overlay, else a read-only workspace); docker works on a scratch copy
    (a view or a worktree, as a review run's), removed afterwards."""
    reason = await asyncio.to_thread(too_broad, spec.workspace, env)
    if reason is not None:
        raise PolicyError(
            f"the build's checks do not run over {spec.workspace}: {reason}; open a project "
            "directory",
            path=str(spec.workspace),
        )
    root, scratch = spec.workspace, None
    if spec.sandbox == "docker":
        from driveros.review import ScratchWorkspace

        # Never the .git of an untrusted run (it may hold credentials): docs/scratch.md.
        runtime = "runsc" if spec.untrusted else spec.runtime
        scratch = await ScratchWorkspace.create(
            spec.workspace, container=runtime, hide_git=spec.untrusted, defer_baseline=True
        )
        stack.push_async_callback(scratch.aclose)
        root = scratch.path
    box, workspace_in_sandbox = make_sandbox(spec, root, env, scratch, discard_writes=True)
    stack.push_async_callback(box.aclose)
    await box.start()
    return box, workspace_in_sandbox


def too_broad(workspace: Path, env: Environment) -> str | None:
    """Why ``workspace`` is no project the feed may run over (the filesystem root, a system
    directory, a home directory or a directory holding one: the rule of ``driveros trust``;
    or the user's home, driveros' state directory or a directory holding either, reached by
    another path, a bind mount or a link), or None. The sandbox shows the workspace whole:
    over the home directory it would show ``~/.ssh`` and the state directory. Blocking."""
    home = user_home(env.process_env)
    real = Path(os.path.realpath(workspace))
    reason = broad_root(real, home)
    if reason is not None:
        return reason
    try:
        seen = real.stat()
    except OSError:
        return None
    for guarded, what in (
        (home, "the home directory"),
        (state_dir(env.process_env), "driveros' state directory"),
    ):
        for path in (guarded, *guarded.parents):
            try:
                info = path.stat()
            except OSError:
                continue
            if (info.st_dev, info.st_ino) == (seen.st_dev, seen.st_ino):
                return f"it is or holds {what} (through another path)"
    return None
