"""The incremental SSE decoder: any chunking gives the same events."""

from __future__ import annotations

import random

from driveros.llm._sse import SSEDecoder, SSEvent

STREAM = (
    ": OPENROUTER PROCESSING\n\n"
    "event: message_start\r\n"
    'data: {"text": "héllo — 世界 🌍"}\r\n\r\n'
    "data: line one\n"
    "data: line two\n"
    "id: 7\n"
    "retry: 1500\n\n"
    "event: error\n"
    'data: {"error": {"message": "boom"}}\n\n'
    "event: lonely\n\n"
    "data: [DONE]\r\r"
).encode()

EXPECTED = [
    SSEvent(data='{"text": "héllo — 世界 🌍"}', event="message_start"),
    SSEvent(data="line one\nline two", id="7", retry=1500),
    SSEvent(data='{"error": {"message": "boom"}}', event="error", id="7"),
    SSEvent(data="[DONE]", id="7"),
]


def _decode(chunks: list[bytes]) -> list[SSEvent]:
    decoder = SSEDecoder()
    out: list[SSEvent] = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    out.extend(decoder.flush())
    return out


def test_sse_decoder_whole_stream() -> None:
    assert _decode([STREAM]) == EXPECTED


def test_sse_decoder_byte_by_byte() -> None:
    assert _decode([STREAM[i : i + 1] for i in range(len(STREAM))]) == EXPECTED


def test_sse_decoder_random_chunking_is_stable() -> None:
    rng = random.Random(1234)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(STREAM)), rng.randint(1, 40)))
        chunks = [STREAM[a:b] for a, b in zip([0, *cuts], [*cuts, len(STREAM)], strict=True)]
        assert _decode(chunks) == EXPECTED


def test_sse_decoder_keeps_unterminated_last_event_on_flush() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: partial") == []
    assert decoder.flush() == [SSEvent(data="partial")]


def test_sse_decoder_strips_only_one_leading_space() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data:  two spaces\ndata:none\n\n") == [SSEvent(data=" two spaces\nnone")]


def test_sse_decoder_long_line_in_tiny_chunks() -> None:
    payload = "x" * 200_000
    raw = f"data: {payload}\n\n".encode()
    decoder = SSEDecoder()
    events: list[SSEvent] = []
    for i in range(0, len(raw), 3):
        events.extend(decoder.feed(raw[i : i + 3]))
    assert events == [SSEvent(data=payload)]
