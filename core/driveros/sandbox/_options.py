"""The settings every tier's sandbox is made with (its own options add the rest:
:class:`~driveros.sandbox.LocalSandboxOptions`, :class:`~driveros.sandbox.DockerSandboxOptions`)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import TypedDict

from driveros.sandbox._files import DEFAULT_MAX_READ
from driveros.sandbox._protocol import DEFAULT_OUTPUT_CAP

#: The timeout applied when ``run()`` is given none.
DEFAULT_TIMEOUT = 600.0

PathLike = str | os.PathLike[str]


@dataclasses.dataclass(frozen=True, kw_only=True)
class SandboxOptions:
    """What both tiers take; ``LocalSandbox(ws, options)`` and ``LocalSandbox(ws, network=True,
    ...)`` are the same: keyword arguments replace the fields of ``options`` (the defaults
    when not given), and so for ``DockerSandbox``."""

    #: The environment commands start from, filtered through the allowlist (None: minimal).
    base_env: Mapping[str, str] | None = None
    default_timeout: float | None = DEFAULT_TIMEOUT
    output_cap: int = DEFAULT_OUTPUT_CAP
    max_read: int = DEFAULT_MAX_READ
    allow_secret_files: Sequence[str] = ()
    #: Where every file written in the workspace also is (an overlay view's upper layer).
    written_in: PathLike | None = None
    #: Set for every command as given (driveros' own settings, never a file's).
    extra_env: Mapping[str, str] | None = None


class SandboxFields(TypedDict, total=False):
    """The fields of :class:`SandboxOptions` as keyword arguments."""

    base_env: Mapping[str, str] | None
    default_timeout: float | None
    output_cap: int
    max_read: int
    allow_secret_files: Sequence[str]
    written_in: PathLike | None
    extra_env: Mapping[str, str] | None
