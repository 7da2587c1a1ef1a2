"""Secret redaction for events, log records and any text leaving the agent."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

from pydantic import TypeAdapter

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
        self._escaped = tuple(json.dumps(s, ensure_ascii=False)[1:-1] for s in self._secrets)
        self._adapter: TypeAdapter[Event] | None = None

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def stream(self) -> StreamGuard:
        """A guard for one stream of text fragments (a secret may be split across them)."""
        return StreamGuard(self)

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
        if self._adapter is None:
            self._adapter = event_adapter()
        return self._adapter.validate_json(raw)


class StreamGuard:
    """Redacts a text stream fragment by fragment.

    A fragment's tail that could be the beginning of a secret is held back until the next
    fragment shows whether it is one; :meth:`flush` releases what is left at the end.
    """

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._secrets = redactor._secrets
        self._held = ""

    def push(self, fragment: str) -> str:
        if not self._secrets:
            return fragment
        text = self._redactor.text(self._held + fragment)
        keep = 0
        for size in range(min(len(text), len(self._secrets[0]) - 1), 0, -1):
            tail = text[-size:]
            if any(secret.startswith(tail) for secret in self._secrets):
                keep = size
                break
        self._held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        held, self._held = self._held, ""
        return self._redactor.text(held)


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
