"""What a :class:`~driveros.sandbox.LocalSandbox` is made with, as one frozen value."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import TypedDict

from driveros.sandbox._files import DEFAULT_MAX_READ
from driveros.sandbox._oneshot import TMPFS_BYTES
from driveros.sandbox._protocol import DEFAULT_OUTPUT_CAP

#: The timeout applied when ``run()`` is given none.
DEFAULT_TIMEOUT = 600.0

PathLike = str | os.PathLike[str]


@dataclasses.dataclass(frozen=True, kw_only=True)
class LocalSandboxOptions:
    """Every setting of a local sandbox but its workspace (see :class:`LocalSandbox`).

    ``LocalSandbox(ws, options)`` and ``LocalSandbox(ws, network=True, ...)`` are the same:
    keyword arguments replace the fields of ``options`` (the defaults when not given)."""

    #: The environment commands start from, filtered through the allowlist (None: minimal).
    base_env: Mapping[str, str] | None = None
    default_timeout: float | None = DEFAULT_TIMEOUT
    output_cap: int = DEFAULT_OUTPUT_CAP
    max_read: int = DEFAULT_MAX_READ
    shell: str = "/bin/sh"
    allow_secret_files: Sequence[str] = ()
    #: Where every file written in the workspace also is (an overlay view's upper layer).
    written_in: PathLike | None = None
    #: Set for every command as given (driveros' own settings, never a file's).
    extra_env: Mapping[str, str] | None = None
    network: bool = False
    #: Bound read-only at their own path.
    read_only: Sequence[PathLike] = ()
    #: Extra writable directories.
    writable: Sequence[PathLike] = ()
    #: Never shown to commands, nor bound as a toolchain (a view's lower layer, the state).
    hidden: Sequence[PathLike] = ()
    #: Commands never change the workspace: their writes land in a throwaway overlay (or, where
    #: the kernel has none for us, the workspace is read-only), and the file operations that
    #: write refuse. For the feed run once over the user's own tree (docs/sandbox.md,
    #: "Sandboxes that discard their writes").
    discard_writes: bool = False
    #: The size of each tmpfs commands write to (``/tmp``; ``/var/tmp``, ``/run``, ``/dev/shm``
    #: at most 512 MiB); with ``discard_writes``, the most all the places it writes hold
    #: together (one tmpfs, also at most 1 GiB and a quarter of the available memory:
    #: driveros.sandbox._oneshot.one_shot_bytes). Filling them fails with ENOSPC.
    tmpfs_bytes: int = TMPFS_BYTES


class LocalSandboxFields(TypedDict, total=False):
    """The fields of :class:`LocalSandboxOptions` as keyword arguments."""

    base_env: Mapping[str, str] | None
    default_timeout: float | None
    output_cap: int
    max_read: int
    shell: str
    allow_secret_files: Sequence[str]
    written_in: PathLike | None
    extra_env: Mapping[str, str] | None
    network: bool
    read_only: Sequence[PathLike]
    writable: Sequence[PathLike]
    hidden: Sequence[PathLike]
    discard_writes: bool
    tmpfs_bytes: int
