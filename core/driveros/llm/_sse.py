"""An incremental Server-Sent Events decoder (the WHATWG event-stream format).

Feed it bytes as they arrive, cut anywhere (mid-line, mid-UTF-8 character, between ``\\r``
and ``\\n``); it returns the complete events seen so far. Comment lines (``: ...``, as
OpenRouter's ``: OPENROUTER PROCESSING`` keep-alives) are dropped; ``event:``, ``data:``,
``id:`` and ``retry:`` fields are honoured; multi-line ``data`` is joined with ``\\n``.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SSEvent:
    """One dispatched event. ``event`` defaults to ``"message"`` as the spec says."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Stateful byte-stream to :class:`SSEvent` decoder. Not thread-safe; one per stream."""

    __slots__ = ("_buf", "_data", "_event", "_id", "_parts", "_pending_cr", "_retry", "_text")

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buf = ""
        self._parts: list[str] = []
        self._pending_cr = False
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEvent]:
        """Decode ``chunk`` and return every event completed by it (possibly none)."""
        text = self._text.decode(chunk)
        if not text:
            return []
        if self._pending_cr:
            # A "\r" ended the previous chunk: a "\n" here belongs to the same line break.
            self._pending_cr = False
            if text.startswith("\n"):
                text = text[1:]
        if "\n" not in text and "\r" not in text:
            # No line ends here: park the piece (a long line in tiny chunks stays linear).
            self._parts.append(text)
            return []
        if self._parts:
            self._parts.append(text)
            text = "".join(self._parts)
            self._parts = []
        buf = self._buf + text
        events: list[SSEvent] = []
        start = 0
        length = len(buf)
        while start < length:
            nl = buf.find("\n", start)
            cr = buf.find("\r", start, nl if nl >= 0 else length)
            if cr >= 0:
                end, nxt = cr, cr + 1
                if nxt < length and buf[nxt] == "\n":
                    nxt += 1
                elif nxt == length:
                    self._pending_cr = True
            elif nl >= 0:
                end, nxt = nl, nl + 1
            else:
                break
            event = self._line(buf[start:end])
            if event is not None:
                events.append(event)
            start = nxt
        self._buf = buf[start:]
        return events

    def flush(self) -> list[SSEvent]:
        """End of stream: dispatch a last event that lacked its closing blank line.

        The spec discards such an event; servers that omit the final blank line are common
        enough that we keep it (callers still detect truncation by the missing terminator).
        """
        buf = self._buf + "".join(self._parts) + self._text.decode(b"", final=True)
        self._buf = ""
        self._parts = []
        if buf:
            self._line(buf)
        return [self._dispatch()] if self._data else []

    def _line(self, line: str) -> SSEvent | None:
        if not line:
            if self._data:
                return self._dispatch()
            self._event = ""
            return None
        if line[0] == ":":
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> SSEvent:
        event = SSEvent(
            data="\n".join(self._data),
            event=self._event or "message",
            id=self._id,
            retry=self._retry,
        )
        self._data = []
        self._event = ""
        self._retry = None
        return event
