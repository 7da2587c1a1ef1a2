"""The one error tree of driveros.

    DriverosError                  every error we raise; carries ``context``
    ├── ConfigError                setup or usage problem (missing key, bad flag): CLI exit 1
    ├── ProviderError              a model provider failed; ``retryable`` says whether to retry
    │   ├── AuthError              401/403: bad or missing key
    │   ├── RateLimitError         429; ``retry_after`` seconds, ``spend_cap`` never retried
    │   ├── OverloadedError        529/503
    │   ├── BadRequestError        400/404/422 with the provider's own message
    │   ├── ServerError            other 5xx
    │   ├── TransportError         connect/read failures, timeouts, connection resets
    │   │   └── StallError         no byte for the first-byte or idle timeout
    │   └── StreamError            malformed or truncated stream, error event inside a 200
    ├── GitError                   a git command failed or could not be started
    │   └── GitNotFoundError       git is not on PATH (also a ConfigError)
    ├── ToolError                  a tool was called wrongly (bad arguments); shown to the model
    ├── SandboxError               every sandbox refusal (see driveros.sandbox)
    ├── MemoryStoreError           long-term memory failures (best-effort: reported, not fatal)
    │   ├── MemoryDamagedError     the database fails its integrity check: never written
    │   ├── MemoryReadOnlyError    the database or its directory cannot be written
    │   └── MemoryDiskFullError    no space left on the device holding the database
    └── CanceledError              a run was canceled by the user

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
