"""The sandbox the diagnostics feed runs in once over the user's own tree (``driveros agent
--fix`` finding its targets, the language server's ``publishDiagnostics``): its commands
cannot change the tree (docs/security.md, "The feed run once on your tree changes nothing").
"""

from __future__ import annotations

import contextlib

from driveros.config import Environment
from driveros.runs._options import RunSpec
from driveros.runs._sandbox import make_sandbox
from driveros.sandbox import Sandbox


async def one_shot_sandbox(
    spec: RunSpec, env: Environment, stack: contextlib.AsyncExitStack
) -> tuple[Sandbox, str]:
    """A started sandbox over ``spec.workspace`` that only reads it, closed with ``stack``,
    and the workspace root as its commands see it. The local tier discards its commands'
    writes (a throwaway overlay, else a read-only workspace); docker works on a scratch copy
    (a view or a worktree, as a review run's), removed afterwards."""
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
