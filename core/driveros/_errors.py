"""The one error tree of driveros: every class, wherever it is defined.

    DriverosError                  every error we raise; carries ``context``
    ├── CanceledError              a run was canceled by the user
    ├── CassetteError              an eval cassette is missing, exhausted or does not match
    ├── CommitMsgError             commit-msg could not propose a message
    ├── ConfigError                setup or usage problem (missing key, bad flag)
    │   ├── DifferentSuitesError   eval compare was given results of two different suites
    │   ├── IntelConfigError       the workspace's diagnostics configuration is invalid
    │   ├── NoTerminalError        interactive approval asked for, but no terminal
    │   ├── TempDirError           $TMPDIR is missing, not writable or full: never another used
    │   └── TrustError             the trust store cannot be changed
    ├── CorpusError                the dogfood corpus cannot be read or written
    ├── CouncilError               the council could not reach a verdict (infrastructure)
    ├── GitError                   a git command failed or could not be started
    │   └── GitNotFoundError       git is not on PATH (also a ConfigError)
    ├── MemoryStoreError           long-term memory failed (best-effort: reported, not fatal)
    │   ├── MemoryDamagedError     the database fails its integrity check: never written
    │   ├── MemoryDiskFullError    no space left on the device holding the database
    │   └── MemoryReadOnlyError    the database or its directory cannot be written
    ├── PlantedLinkError           a file driveros keeps in a workspace is behind a link
    ├── ProviderError              a model provider failed; ``retryable`` says whether to retry
    │   ├── AuthError              401/403: bad or missing key
    │   ├── BadRequestError        400/404/422 with the provider's own message
    │   ├── OverloadedError        529/503
    │   ├── RateLimitError         429; ``retry_after`` seconds, ``spend_cap`` never retried
    │   ├── ServerError            other 5xx
    │   ├── StreamError            malformed or truncated stream, error event inside a 200
    │   └── TransportError         connect/read failures, timeouts, connection resets
    │       └── StallError         no byte for the first-byte or idle timeout
    ├── ReviewError                scratch copies, diffs and review actions
    │   ├── ConflictError          the user changed files since the baseline; nothing written
    │   ├── HookChangeError        commit refused: the changes touch a git hook or config
    │   ├── NotARepositoryError    commit asked for a workspace that is not a repository
    │   ├── ScratchClosedError     the scratch copy was used after it was closed
    │   └── UnknownPathError       a review action named a path that is not proposed
    ├── RunError                   an editor's run command does not fit (unknown id, wrong state)
    ├── SandboxError               every sandbox refusal or failure (see driveros.sandbox)
    │   ├── CommandTimeoutError    a command timed out (APIs without a CommandResult)
    │   ├── ConcurrentChangeError  the file changed between read and write; retry
    │   ├── EditError              ``edit``: ``old`` not found, or found more than once
    │   ├── FileTooLargeError      a file read exceeded the allowed size
    │   ├── InvalidPathError       an empty, control-character, non-UTF-8 or too long path
    │   ├── NotFoundError          a workspace path does not exist
    │   ├── NotTextError           the bytes are not UTF-8 text
    │   ├── PathEscapeError        a path would resolve outside the workspace
    │   ├── PolicyError            the sandbox's policy forbids the action
    │   │   ├── SecretFileError    a path on the secret-file deny list; not read
    │   │   └── SpecialFileError   a device file, FIFO or socket; never opened
    │   ├── ProcessNotFoundError   no background process with that id
    │   ├── RuntimeMissingError    the isolation runtime (e.g. runsc) is missing: fail closed
    │   │   └── LocalSandboxUnavailableError  bubblewrap cannot run: commands refused, with the fix
    │   ├── SandboxClosedError     the sandbox was used after ``aclose()``
    │   ├── SearchError            ``search`` could not run: a bad pattern or glob
    │   └── WrongKindError         a file expected and a directory found, or the reverse
    ├── StructuredOutputError      a council reply lacked the JSON object asked for
    └── ToolError                  a tool was called wrongly (bad arguments); shown to the model
        └── LanguageServerError    a language server is missing, refused, failed or ended

The classes are defined here when several packages raise or catch them, otherwise in the
package that raises them (``driveros.sandbox``, ``driveros.review``, ``driveros.council``,
``driveros.evals``, ...) and exported from its ``__init__``; the language server's
``RunError`` lives with its run manager (``driveros_lsp._runs``). docs/errors.md shows the
same tree with what each error means to a user and its CLI exit code and LSP answer;
tests/test_errors.py fails when a class exists that this tree or that page does not list.

Foreign exceptions are translated at the boundary that meets them, with ``raise ... from``.
"""

from __future__ import annotations

from typing import Any


class DriverosError(Exception):
    """Base of every driveros error. ``context`` holds structured details for logs and events."""

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        self.context: dict[str, Any] = context

    def __str__(self) -> str:
        return self.message


class ConfigError(DriverosError):
    """Setup or usage error: a missing key, an unknown provider, a bad flag value."""


class TempDirError(ConfigError):
    """The temporary directory (``$TMPDIR``) cannot take driveros's files: missing, not
    writable or full. driveros never falls back to another directory (``driveros._tmp``)."""


class ProviderError(DriverosError):
    """A model provider failed. ``retryable`` tells the retry layer whether to try again."""

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status: int | None = None,
        retryable: bool | None = None,
        **context: Any,
    ) -> None:
        super().__init__(message, provider=provider, status=status, **context)
        self.provider = provider
        self.status = status
        if retryable is not None:
            self.retryable = retryable


class AuthError(ProviderError):
    """The provider rejected the credentials (401/403)."""


class RateLimitError(ProviderError):
    """429. ``retry_after`` in seconds when the provider said; a spend cap is never retried."""

    retryable = True

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        spend_cap: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(message, retryable=not spend_cap, **kwargs)
        self.retry_after = retry_after
        self.spend_cap = spend_cap
        self.context.update(retry_after=retry_after, spend_cap=spend_cap)


class OverloadedError(ProviderError):
    """The provider is overloaded (529, 503)."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class BadRequestError(ProviderError):
    """The provider refused the request as invalid; the message is the provider's own."""


class ServerError(ProviderError):
    """A 5xx other than overload."""

    retryable = True


class TransportError(ProviderError):
    """Connect/read failure or timeout before a complete response."""

    retryable = True


class StallError(TransportError):
    """The provider sent nothing for ``after`` seconds: before the first byte of the
    response (``phase="first_byte"``) or in the middle of a stream (``phase="idle"``)."""

    def __init__(self, message: str, *, after: float, phase: str, **kwargs: Any) -> None:
        super().__init__(message, after=after, phase=phase, **kwargs)
        self.after = after
        self.phase = phase


class StreamError(ProviderError):
    """A malformed or truncated stream, or an error reported inside a 200 stream."""


class GitError(DriverosError):
    """A git command failed or could not be started; ``context`` has ``args``, ``returncode``,
    ``stderr`` and ``cwd``."""


class GitNotFoundError(GitError, ConfigError):
    """The ``git`` executable is not on PATH."""


class ToolError(DriverosError):
    """A tool call could not be carried out as asked; the message is shown to the model."""


class SandboxError(DriverosError):
    """Base of every sandbox refusal or failure (see ``driveros.sandbox``)."""


class MemoryStoreError(DriverosError):
    """Long-term memory failed; callers treat it as best-effort."""


class MemoryDamagedError(MemoryStoreError):
    """The memory database fails SQLite's integrity check; it is never written to."""


class MemoryReadOnlyError(MemoryStoreError):
    """The memory database (or the directory that must hold it) cannot be written."""


class MemoryDiskFullError(MemoryStoreError):
    """No space left on the device that holds the memory database."""


class CanceledError(DriverosError):
    """The run was canceled (SIGINT/SIGTERM or a cancel command)."""
