"""The sandbox of a run: its tier, its mounts, and the started sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from driveros.agent import Tier
from driveros.config import Environment
from driveros.runs._spec import RunSpec
from driveros.sandbox import DockerSandbox, LocalSandbox, Sandbox

if TYPE_CHECKING:
    from driveros.review import ScratchWorkspace

#: Where DockerSandbox mounts the workspace (docs/sandbox.md): the root its commands see.
DOCKER_WORKSPACE = "/workspace"
#: Where a review run's git directory is mounted read-only in the container (docs/review.md).
DOCKER_GIT_DIR = "/driveros/git"


def run_tier(spec: RunSpec) -> Tier:
    """The tier the run's commands execute in (the approval policy decides by it)."""
    docker = spec.sandbox == "docker"
    return Tier(
        sandbox=spec.sandbox,
        runtime=spec.runtime if docker else None,
        network=spec.network if docker else True,
        scratch=spec.review,
    )


def docker_git(
    spec: RunSpec, scratch: ScratchWorkspace | None
) -> tuple[dict[str, str], dict[str, str]]:
    """Read-only mounts and environment that let git work on a scratch worktree in docker.

    Never for untrusted runs: the git directory may hold credentials (``.git/config``).
    """
    if scratch is None or spec.untrusted:
        return {}, {}
    git = scratch.container_git(git_at=DOCKER_GIT_DIR, work_tree=DOCKER_WORKSPACE)
    return ({}, {}) if git is None else (git.mounts, git.env)


async def open_sandbox(
    spec: RunSpec, root: Path, env: Environment, scratch: ScratchWorkspace | None = None
) -> tuple[Sandbox, str]:
    """The started sandbox over ``root`` and the workspace root as its commands see it."""
    box: LocalSandbox | DockerSandbox
    # A view's writes all land in its upper layer: the set-id sweep at close walks only that.
    written_in = scratch.written_layer if scratch is not None and scratch.path == root else None
    if spec.sandbox == "docker":
        mounts, git_env = docker_git(spec, scratch)
        box = DockerSandbox(
            root,
            runtime=spec.runtime,
            untrusted=spec.untrusted,
            network=spec.network,
            base_env=env.process_env,
            extra_env=git_env,
            private_copy=scratch is not None,
            extra_mounts={src: dst for src, dst in mounts.items()},
            allow_secret_files=spec.allow_secret_files,
            written_in=written_in,
        )
        seen_as = DOCKER_WORKSPACE
    else:
        box = LocalSandbox(
            root,
            base_env=env.process_env,
            allow_secret_files=spec.allow_secret_files,
            written_in=written_in,
        )
        seen_as = str(root)
    try:
        await box.start()
    except BaseException:
        await box.aclose()
        raise
    return box, seen_as
