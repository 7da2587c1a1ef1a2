"""One model turn, streamed: text and thinking fragments become (redacted) events."""

from __future__ import annotations

from driveros._errors import StreamError
from driveros.agent import _events as ev
from driveros.agent._sink import EventSink
from driveros.llm import Provider, Request, Response, StreamDone, TextDelta, ThinkingDelta


async def stream_turn(
    provider: Provider, request: Request, *, sink: EventSink, turn: int
) -> Response:
    """Stream ``request`` and return the final response.

    Fragments are passed through a redaction guard per stream, so a secret split across two
    fragments never reaches an event. Leaving early (cancellation) closes the stream.
    """
    response: Response | None = None
    text_guard = sink.redactor.stream()
    thinking_guard = sink.redactor.stream()
    stream = provider.stream(request)
    try:
        async for event in stream:
            match event:
                case TextDelta():
                    if text := text_guard.push(event.text):
                        await sink.emit(ev.Text, turn=turn, text=text)
                case ThinkingDelta():
                    text = thinking_guard.push(event.text)
                    if text or event.signature:
                        await sink.emit(
                            ev.Thinking, turn=turn, text=text, signed=bool(event.signature)
                        )
                case StreamDone():
                    response = event.response
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    if rest := thinking_guard.flush():
        await sink.emit(ev.Thinking, turn=turn, text=rest)
    if rest := text_guard.flush():
        await sink.emit(ev.Text, turn=turn, text=rest)
    if response is None:
        raise StreamError("the model stream ended without a final response", provider=provider.name)
    return response
