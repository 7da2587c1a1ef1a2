"""The Sandbox protocol: the one effect boundary every agent tool goes through.

Paths are always workspace-relative strings ("src/app.py", "."). Anything that would leave
the workspace is refused with a :class:`PathEscapeError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from driveros._errors import SandboxError

#: Default cap for captured stdout/stderr of one command, per stream.
DEFAULT_OUTPUT_CAP = 1024 * 1024


class PathEscapeError(SandboxError):
    """A path would resolve outside the workspace (``..``, absolute, symlink, /proc tricks)."""


class PolicyError(SandboxError):
    """The sandbox's policy forbids the action."""


class RuntimeMissingError(SandboxError):
    """The requested isolation runtime (e.g. gVisor ``runsc``) is not available; fail closed."""


class LocalSandboxUnavailableError(RuntimeMissingError):
    """The local tier's OS sandbox (bubblewrap) cannot run here: commands are refused, never
    run on the host. The message names the cause and the fix; read-only file tools work."""


class SandboxClosedError(SandboxError):
    """The sandbox was used after ``aclose()``."""


class CommandTimeoutError(SandboxError):
    """Raised only by APIs that cannot report a timeout in a CommandResult."""


class FileTooLargeError(SandboxError):
    """A file read exceeded the allowed size."""


class NotFoundError(SandboxError):
    """A workspace path does not exist."""


class InvalidPathError(SandboxError):
    """A path is unusable as given: empty, NUL or control characters, not valid UTF-8, too long."""


class SecretFileError(PolicyError):
    """The path is on the secret-file deny list (``.env``, keys, credentials); not read."""


class SpecialFileError(PolicyError):
    """The path names a device file, FIFO or socket; the sandbox never opens those."""


class WrongKindError(SandboxError):
    """A file was expected and a directory found, or the other way round."""


class NotTextError(SandboxError):
    """``read_file``/``edit`` met bytes that are not UTF-8 text (Python callers: ``read_bytes``)."""


class EditError(SandboxError):
    """``edit`` could not apply: ``old`` not found, or found more than once without replace_all."""


class ConcurrentChangeError(SandboxError):
    """The file changed between reading and writing it; nothing was written, retry."""


class SearchError(SandboxError):
    """``search`` could not run: an invalid pattern or glob."""


class ProcessNotFoundError(SandboxError):
    """No process with that id was started by this sandbox's process host."""


class CommandResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    stdout: str
    stderr: str
    exit_code: int
    duration_ms: float
    timed_out: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    #: The byte cap applied to each stream.
    output_cap: int = DEFAULT_OUTPUT_CAP

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class FileStat(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    kind: Literal["file", "dir", "symlink", "other"]
    size: int
    mtime: float


class DirEntry(BaseModel):
    model_config = ConfigDict(frozen=True)

    #: The name; one that is not UTF-8 or holds control characters is shown escaped
    #: (``\\xff``, ``\\n``) and ``addressable`` is False: no path names it.
    name: str
    kind: Literal["file", "dir", "symlink", "other"]
    size: int = 0
    addressable: bool = True


class LineRange(BaseModel):
    """Lines ``first``..``last`` (1-based) of a file, read by streaming to them."""

    model_config = ConfigDict(frozen=True)

    text: str
    first: int
    last: int
    #: Lines in the whole file, or None when the file is too large to count them all.
    total: int | None
    size: int
    #: The range was cut at the byte cap (``last`` is the last whole line returned).
    capped: bool = False


class SearchMatch(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    line: int
    text: str


class SearchResults(list[SearchMatch]):
    """The matches of one ``search``, and the secret files in its scope that were skipped.

    A list, so callers that only want matches use it as one. ``skipped`` names deny-listed
    files (docs/sandbox.md, "Secret files") that were not searched, whether or not they would
    have matched: naming only matching ones would tell what a secret contains.
    """

    def __init__(
        self,
        matches: Iterable[SearchMatch] = (),
        skipped: Iterable[str] = (),
        *,
        too_large: Iterable[str] = (),
        binary: Iterable[str] = (),
        odd_names: Iterable[str] = (),
    ) -> None:
        super().__init__(matches)
        self.skipped: tuple[str, ...] = tuple(skipped)
        #: Files over the search size limit, not searched.
        self.too_large: tuple[str, ...] = tuple(too_large)
        #: Binary files (a NUL byte) that match; their lines are not shown.
        self.binary: tuple[str, ...] = tuple(binary)
        #: Files whose names are not UTF-8 (or hold control characters), escaped; their
        #: matches cannot be shown as paths the file tools accept.
        self.odd_names: tuple[str, ...] = tuple(odd_names)


@runtime_checkable
class Sandbox(Protocol):
    """Every effect of the agent. Implementations: LocalSandbox, DockerSandbox."""

    @property
    def workspace(self) -> Path: ...

    @property
    def tier(self) -> str: ...

    @property
    def contained(self) -> bool:
        """What it runs reaches nothing outside (an OS sandbox or a container, network off)."""
        ...

    async def run(
        self,
        command: str,
        *,
        cwd: str = ".",
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stdin: bytes | None = None,
    ) -> CommandResult: ...

    async def read_file(self, path: str) -> str: ...

    async def read_bytes(self, path: str) -> bytes: ...

    async def read_lines(self, path: str, first: int, count: int | None) -> LineRange: ...

    async def write_file(self, path: str, content: str) -> None: ...

    async def edit(self, path: str, old: str, new: str, *, replace_all: bool = False) -> int: ...

    async def list_dir(self, path: str = ".") -> list[DirEntry]: ...

    async def search(
        self, pattern: str, *, path: str = ".", glob: str | None = None, max_results: int = 200
    ) -> list[SearchMatch]: ...

    async def stat(self, path: str) -> FileStat: ...

    async def remove(self, path: str) -> None: ...

    async def aclose(self) -> None: ...
