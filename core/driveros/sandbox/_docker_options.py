"""What a :class:`~driveros.sandbox.DockerSandbox` is made with, as one frozen value."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Literal

from driveros.sandbox._options import PathLike, SandboxFields, SandboxOptions

DEFAULT_IMAGE = "driveros-sandbox:latest"
Runtime = Literal["runc", "runsc"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class DockerSandboxOptions(SandboxOptions):
    """Every setting of a docker sandbox but its workspace (see :class:`DockerSandbox`): those
    of both tiers (:class:`~driveros.sandbox._options.SandboxOptions`) and these."""

    #: ``runc`` (the default) or gVisor's ``runsc``; ``untrusted`` always means ``runsc``.
    runtime: Runtime | None = None
    #: Code that may be hostile: gVisor, failing closed when the daemon lacks it.
    untrusted: bool = False
    network: bool = False
    image: str = DEFAULT_IMAGE
    #: Host paths mounted read-only at the container paths they map to.
    extra_mounts: Mapping[PathLike, str] | None = None
    #: Container limits (docker's own notation).
    memory: str = "2g"
    cpus: float = 2.0
    pids_limit: int = 512
    tmp_size: str = "1g"
    #: ``uid:gid`` commands run as (None: the workspace owner's; never root).
    user: str | None = None
    #: The Docker daemon to talk to (None: the environment's, as the docker SDK finds it).
    base_url: str | None = None
    #: The workspace is driveros' own scratch copy (a root-owned one is opened to the
    #: container's user).
    private_copy: bool = False
    #: A file bound read-only at ``/workspace/.git`` instead of the workspace's own ``.git``
    #: (a review worktree copy's link to its git directory, mounted by ``extra_mounts``).
    git_link: PathLike | None = None


class DockerSandboxFields(SandboxFields, total=False):
    """The fields of :class:`DockerSandboxOptions` as keyword arguments."""

    runtime: Runtime | None
    untrusted: bool
    network: bool
    image: str
    extra_mounts: Mapping[PathLike, str] | None
    memory: str
    cpus: float
    pids_limit: int
    tmp_size: str
    user: str | None
    base_url: str | None
    private_copy: bool
    git_link: PathLike | None
