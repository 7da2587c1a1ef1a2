"""The event sink of one run: numbering, redaction and delivery to the consumer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from driveros.agent._events import Event
from driveros.agent._redact import Redactor

OnEvent = Callable[[Event], Awaitable[None]]
E = TypeVar("E", bound=Event)


class EventSink:
    """Stamps ``run_id`` and ``seq`` on every event, redacts secrets, then delivers it."""

    def __init__(
        self, run_id: str, on_event: OnEvent | None = None, redactor: Redactor | None = None
    ) -> None:
        self.run_id = run_id
        self.redactor = redactor or Redactor()
        self._on_event = on_event
        self._seq = 0
        #: Fields added to every event of a kind (set before it is emitted), e.g. what the
        #: run's setup learned for ``run_started``.
        self.extra_fields: dict[type[Any], dict[str, Any]] = {}

    @property
    def emitted(self) -> int:
        """How many events went out so far."""
        return self._seq

    async def emit(self, kind: type[E], **fields: Any) -> E:
        self._seq += 1
        fields = {**self.extra_fields.get(kind, {}), **fields}
        event = self.redactor.event(kind(run_id=self.run_id, seq=self._seq, **fields))
        if self._on_event is not None:
            await self._on_event(event)
        return cast(E, event)
