"""Replay recorded provider traffic (../shared/fixtures/llm) through httpx.MockTransport.

Response bodies are re-chunked at seeded random byte boundaries, so SSE lines and UTF-8
characters get cut anywhere. Every request the adapter sends is captured for assertions.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml


@dataclass
class Interaction:
    uri: str
    request_body: Any
    status: int
    headers: dict[str, str]
    body: bytes
    request_headers: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        return json.loads(self.body)


def _headers(raw: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in (raw or {}).items():
        out[str(key).lower()] = str(value[0] if isinstance(value, list) else value)
    return out


def _request_body(request: dict[str, Any]) -> Any:
    if "parsed_body" in request:
        return request["parsed_body"]
    body = request.get("body")
    if isinstance(body, dict):
        body = body.get("string")
    if isinstance(body, str) and body:
        return json.loads(body)
    return body


def _response_body(response: dict[str, Any]) -> bytes:
    if "parsed_body" in response:
        return json.dumps(response["parsed_body"]).encode()
    body = response.get("body")
    if isinstance(body, dict):
        body = body.get("string", "")
    if isinstance(body, bytes):
        return body
    return str(body or "").encode()


def load_interactions(path: Path) -> list[Interaction]:
    """Every HTTP interaction of a cassette; a raw ``.txt`` file is one 200 SSE answer."""
    if path.suffix == ".txt":
        return [
            Interaction(
                uri="https://api.anthropic.com/v1/messages",
                request_body=None,
                status=200,
                headers={"content-type": "text/event-stream"},
                body=path.read_bytes(),
            )
        ]
    data = yaml.safe_load(path.read_text())
    out = []
    for item in data["interactions"]:
        request, response = item["request"], item["response"]
        out.append(
            Interaction(
                uri=request["uri"],
                request_body=_request_body(request),
                status=int(response["status"]["code"]),
                headers=_headers(response.get("headers")),
                body=_response_body(response),
                request_headers=_headers(request.get("headers")),
            )
        )
    return out


def rechunk(body: bytes, rng: random.Random) -> list[bytes]:
    chunks = []
    i = 0
    while i < len(body):
        step = rng.choice((1, 2, 3, 5, 7, 13, 64, 200, 1000))
        chunks.append(body[i : i + step])
        i += step
    return chunks


class Replay:
    """Serves the given interactions in order and records every request sent."""

    def __init__(self, interactions: list[Interaction], *, seed: int = 0) -> None:
        self.interactions = list(interactions)
        self.sent: list[httpx.Request] = []
        self.rng = random.Random(seed)

    def sent_json(self, index: int = -1) -> Any:
        return json.loads(self.sent[index].content)

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        item = self.interactions[len(self.sent) - 1]
        chunks = rechunk(item.body, self.rng)

        async def body() -> AsyncIterator[bytes]:
            for chunk in chunks:
                yield chunk

        headers = {
            k: v
            for k, v in item.headers.items()
            if k not in ("content-length", "content-encoding", "transfer-encoding")
        }
        return httpx.Response(item.status, headers=headers, content=body())

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handler))


@pytest.fixture
def cassette(llm_fixtures: Path) -> Callable[[str], list[Interaction]]:
    def load(relative: str) -> list[Interaction]:
        return load_interactions(llm_fixtures / relative)

    return load
