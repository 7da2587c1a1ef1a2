"""Sandboxes: one async protocol, three isolation tiers (local, docker runc, docker runsc).

``LocalSandbox`` runs host subprocesses behind a symlink-safe path fence. See
docs/sandbox.md for the guarantees of each tier.
"""

from driveros._errors import SandboxError
from driveros.sandbox._env import scrub as scrub_env
from driveros.sandbox._local import LocalSandbox
from driveros.sandbox._protocol import (
    DEFAULT_OUTPUT_CAP,
    CommandTimeoutError,
    ConcurrentChangeError,
    DirEntry,
    EditError,
    FileStat,
    FileTooLargeError,
    InvalidPathError,
    NotFoundError,
    NotTextError,
    PathEscapeError,
    PolicyError,
    ProcessNotFoundError,
    RunResult,
    RuntimeMissingError,
    Sandbox,
    SandboxClosedError,
    SearchError,
    SearchMatch,
    SpecialFileError,
    WrongKindError,
)

__all__ = [
    "DEFAULT_OUTPUT_CAP",
    "CommandTimeoutError",
    "ConcurrentChangeError",
    "DirEntry",
    "EditError",
    "FileStat",
    "FileTooLargeError",
    "InvalidPathError",
    "LocalSandbox",
    "NotFoundError",
    "NotTextError",
    "PathEscapeError",
    "PolicyError",
    "ProcessNotFoundError",
    "RunResult",
    "RuntimeMissingError",
    "Sandbox",
    "SandboxClosedError",
    "SandboxError",
    "SearchError",
    "SearchMatch",
    "SpecialFileError",
    "WrongKindError",
    "scrub_env",
]
