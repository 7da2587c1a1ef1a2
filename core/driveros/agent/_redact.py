"""Secret redaction for events, log records and any text leaving the agent."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from driveros.agent._events import Event, event_adapter

MASK = "[REDACTED]"


class Redactor:
    """Replaces every known secret value with ``[REDACTED]``.

    Values shorter than 6 characters are ignored (they would mask ordinary words). Longest
    values are replaced first so a secret that contains another is masked whole.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = {s for s in secrets if len(s) >= 6}
        self._secrets = tuple(sorted(values, key=len, reverse=True))
        # The JSON-escaped form matters when we scan serialized events.
        self._escaped = tuple(json.dumps(s)[1:-1] for s in self._secrets)

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, MASK)
        return value

    def event(self, event: Event) -> Event:
        """The event itself when it holds no secret, otherwise a redacted copy."""
        if not self._secrets:
            return event
        raw = event.model_dump_json()
        if not any(s in raw for s in self._escaped):
            return event
        for escaped in self._escaped:
            raw = raw.replace(escaped, MASK)
        return event_adapter().validate_json(raw)


class RedactingFilter(logging.Filter):
    """A logging filter that redacts secrets from the rendered message of every record."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self._redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        if self._redactor:
            message = record.getMessage()
            clean = self._redactor.text(message)
            if clean != message:
                record.msg, record.args = clean, None
        return True
