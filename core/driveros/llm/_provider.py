"""The provider protocol every adapter implements."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from driveros.llm._types import Request, Response, StreamEvent


@runtime_checkable
class Provider(Protocol):
    """A model endpoint. ``stream()`` always ends with a ``StreamDone`` event.

    Providers own their HTTP client unless one was passed in; ``aclose()`` releases it.
    Cancelling a task awaiting ``generate()`` or iterating ``stream()`` closes the HTTP
    stream at once.
    """

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    async def generate(self, req: Request) -> Response: ...

    def stream(self, req: Request) -> AsyncIterator[StreamEvent]: ...

    async def aclose(self) -> None: ...
