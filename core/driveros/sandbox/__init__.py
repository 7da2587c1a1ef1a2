"""Sandboxes: one async protocol, three isolation tiers (local, docker runc, docker runsc)."""

from driveros._errors import SandboxError
from driveros.sandbox._protocol import (
    DEFAULT_OUTPUT_CAP,
    CommandTimeoutError,
    DirEntry,
    FileStat,
    FileTooLargeError,
    NotFoundError,
    PathEscapeError,
    PolicyError,
    RunResult,
    RuntimeMissingError,
    Sandbox,
    SandboxClosedError,
    SearchMatch,
)

__all__ = [
    "DEFAULT_OUTPUT_CAP",
    "CommandTimeoutError",
    "DirEntry",
    "FileStat",
    "FileTooLargeError",
    "NotFoundError",
    "PathEscapeError",
    "PolicyError",
    "RunResult",
    "RuntimeMissingError",
    "Sandbox",
    "SandboxClosedError",
    "SandboxError",
    "SearchMatch",
]
