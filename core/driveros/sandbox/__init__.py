"""Sandboxes: one async protocol, three isolation tiers (local, docker runc, docker runsc).

``LocalSandbox`` runs commands in one bubblewrap sandbox, its file operations behind a
symlink-safe path fence; ``DockerSandbox``
runs commands in one locked-down container per sandbox (importing it does not import the
docker SDK). Both also offer shell sessions and a process host. See docs/sandbox.md,
docs/sandbox-api.md and docs/docker.md.
"""

from driveros._errors import SandboxError
from driveros.sandbox._bwrap import probe_local_sandbox
from driveros.sandbox._docker import DEFAULT_IMAGE, DockerSandbox, DockerSandboxOptions
from driveros.sandbox._env import dotenv_assignments
from driveros.sandbox._env import scrub as scrub_env
from driveros.sandbox._files import MAX_RANGE_BYTES
from driveros.sandbox._local import LocalSandbox, LocalSandboxOptions
from driveros.sandbox._paths import is_host_run_file
from driveros.sandbox._processes import BackgroundProcess, ProcessOutput
from driveros.sandbox._protocol import (
    DEFAULT_OUTPUT_CAP,
    CommandResult,
    CommandTimeoutError,
    ConcurrentChangeError,
    DirEntry,
    EditError,
    FileStat,
    FileTooLargeError,
    InvalidPathError,
    LineRange,
    LocalSandboxUnavailableError,
    NotFoundError,
    NotTextError,
    PathEscapeError,
    PolicyError,
    ProcessNotFoundError,
    RuntimeMissingError,
    Sandbox,
    SandboxClosedError,
    SearchError,
    SearchMatch,
    SearchResults,
    SecretFileError,
    SpecialFileError,
    WrongKindError,
)
from driveros.sandbox._search import MAX_FALLBACK_FILE
from driveros.sandbox._secrets import secret_path_reason
from driveros.sandbox._session import ShellSession

__all__ = [
    "DEFAULT_IMAGE",
    "DEFAULT_OUTPUT_CAP",
    "MAX_FALLBACK_FILE",
    "MAX_RANGE_BYTES",
    "BackgroundProcess",
    "CommandResult",
    "CommandTimeoutError",
    "ConcurrentChangeError",
    "DirEntry",
    "DockerSandbox",
    "DockerSandboxOptions",
    "EditError",
    "FileStat",
    "FileTooLargeError",
    "InvalidPathError",
    "LineRange",
    "LocalSandbox",
    "LocalSandboxOptions",
    "LocalSandboxUnavailableError",
    "NotFoundError",
    "NotTextError",
    "PathEscapeError",
    "PolicyError",
    "ProcessNotFoundError",
    "ProcessOutput",
    "RuntimeMissingError",
    "Sandbox",
    "SandboxClosedError",
    "SandboxError",
    "SearchError",
    "SearchMatch",
    "SearchResults",
    "SecretFileError",
    "ShellSession",
    "SpecialFileError",
    "WrongKindError",
    "dotenv_assignments",
    "is_host_run_file",
    "probe_local_sandbox",
    "scrub_env",
    "secret_path_reason",
]
