"""Fill-in-the-middle wire formats for a scripted turn.

``/v1/completions`` is the OpenAI-compatible legacy completions endpoint (``prompt`` plus
``suffix``, as Ollama, llama.cpp's server and vLLM serve it): each choice carries ``text``.
``/v1/fim/completions`` is Mistral's: the answer is shaped like a chat completion (``message``
in a whole answer, ``delta`` in stream chunks).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from driveros.testing._openai_wire import split
from driveros.testing._script import Turn, TurnUsage

COMPLETIONS_PATH = "/v1/completions"
MISTRAL_FIM_PATH = "/v1/fim/completions"


def _finish(turn: Turn) -> str:
    return "length" if turn.stop_reason == "max_tokens" else "stop"


def _usage(usage: TurnUsage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def answer(turn: Turn, *, path: str, model: str, rid: str, usage: TurnUsage) -> dict[str, Any]:
    """The whole (non-streamed) answer for ``path``."""
    if path == MISTRAL_FIM_PATH:
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": turn.text},
            "finish_reason": _finish(turn),
        }
        kind = "chat.completion"
    else:
        choice = {"index": 0, "text": turn.text, "logprobs": None, "finish_reason": _finish(turn)}
        kind = "text_completion"
    return {
        "id": rid,
        "object": kind,
        "created": 0,
        "model": model,
        "choices": [choice],
        "usage": _usage(usage),
    }


def stream_frames(
    turn: Turn, *, path: str, model: str, rid: str, usage: TurnUsage, chunk: int
) -> Iterator[bytes]:
    """SSE frames of a streamed answer for ``path``, ending with ``data: [DONE]``."""
    mistral = path == MISTRAL_FIM_PATH
    pieces = split(turn.text, chunk)
    for index, piece in enumerate(pieces):
        last = index == len(pieces) - 1
        finish = _finish(turn) if last else None
        if mistral:
            choice: dict[str, Any] = {
                "index": 0,
                "delta": {"content": piece},
                "finish_reason": finish,
            }
        else:
            choice = {"index": 0, "text": piece, "logprobs": None, "finish_reason": finish}
        frame: dict[str, Any] = {
            "id": rid,
            "object": "chat.completion.chunk" if mistral else "text_completion",
            "created": 0,
            "model": model,
            "choices": [choice],
        }
        if last:
            frame["usage"] = _usage(usage)
        yield b"data: " + json.dumps(frame).encode() + b"\n\n"
    yield b"data: [DONE]\n\n"
