"""What a :class:`~driveros.sandbox.DockerSandbox` is made with, as one frozen value."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict

from driveros.sandbox._files import DEFAULT_MAX_READ
from driveros.sandbox._protocol import DEFAULT_OUTPUT_CAP

DEFAULT_IMAGE = "driveros-sandbox:latest"
#: The timeout applied when ``run()`` is given none.
DEFAULT_TIMEOUT = 600.0

PathLike = str | os.PathLike[str]
Runtime = Literal["runc", "runsc"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class DockerSandboxOptions:
    """Every setting of a docker sandbox but its workspace (see :class:`DockerSandbox`).

    ``DockerSandbox(ws, options)`` and ``DockerSandbox(ws, network=True, ...)`` are the same:
    keyword arguments replace the fields of ``options`` (the defaults when not given)."""

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
    #: The environment commands start from, filtered through the allowlist (None: minimal).
    base_env: Mapping[str, str] | None = None
    default_timeout: float | None = DEFAULT_TIMEOUT
    output_cap: int = DEFAULT_OUTPUT_CAP
    max_read: int = DEFAULT_MAX_READ
    #: ``uid:gid`` commands run as (None: the workspace owner's; never root).
    user: str | None = None
    #: The Docker daemon to talk to (None: the environment's, as the docker SDK finds it).
    base_url: str | None = None
    allow_secret_files: Sequence[str] = ()
    #: Where every file written in the workspace also is (an overlay view's upper layer).
    written_in: PathLike | None = None
    #: Set for every command as given (driveros' own settings, never a file's).
    extra_env: Mapping[str, str] | None = None
    #: The workspace is driveros' own scratch copy (a root-owned one is opened to the
    #: container's user).
    private_copy: bool = False


class DockerSandboxFields(TypedDict, total=False):
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
    base_env: Mapping[str, str] | None
    default_timeout: float | None
    output_cap: int
    max_read: int
    user: str | None
    base_url: str | None
    allow_secret_files: Sequence[str]
    written_in: PathLike | None
    extra_env: Mapping[str, str] | None
    private_copy: bool
