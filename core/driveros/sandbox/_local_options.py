"""What a :class:`~driveros.sandbox.LocalSandbox` is made with, as one frozen value."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from driveros.sandbox._oneshot import TMPFS_BYTES
from driveros.sandbox._options import DEFAULT_TIMEOUT, PathLike, SandboxFields, SandboxOptions

__all__ = ["DEFAULT_TIMEOUT", "LocalSandboxFields", "LocalSandboxOptions"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class LocalSandboxOptions(SandboxOptions):
    """Every setting of a local sandbox but its workspace (see :class:`LocalSandbox`): those
    of both tiers (:class:`~driveros.sandbox._options.SandboxOptions`) and these."""

    shell: str = "/bin/sh"
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


class LocalSandboxFields(SandboxFields, total=False):
    """The fields of :class:`LocalSandboxOptions` as keyword arguments."""

    shell: str
    network: bool
    read_only: Sequence[PathLike]
    writable: Sequence[PathLike]
    hidden: Sequence[PathLike]
    discard_writes: bool
    tmpfs_bytes: int
