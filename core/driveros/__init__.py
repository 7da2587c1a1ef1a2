"""driveros: a coding agent behind a language server.

Subpackages are imported explicitly (``from driveros import llm``); importing ``driveros``
itself is cheap and has no side effects.
"""

from driveros._errors import (
    AuthError,
    BadRequestError,
    CanceledError,
    ConfigError,
    DriverosError,
    GitError,
    GitNotFoundError,
    MemoryDamagedError,
    MemoryDiskFullError,
    MemoryReadOnlyError,
    MemoryStoreError,
    OverloadedError,
    ProviderError,
    RateLimitError,
    SandboxError,
    ServerError,
    StallError,
    StreamError,
    ToolError,
    TransportError,
)

__version__ = "0.1.0"

__all__ = [
    "AuthError",
    "BadRequestError",
    "CanceledError",
    "ConfigError",
    "DriverosError",
    "GitError",
    "GitNotFoundError",
    "MemoryDamagedError",
    "MemoryDiskFullError",
    "MemoryReadOnlyError",
    "MemoryStoreError",
    "OverloadedError",
    "ProviderError",
    "RateLimitError",
    "SandboxError",
    "ServerError",
    "StallError",
    "StreamError",
    "ToolError",
    "TransportError",
    "__version__",
]
