"""Record every provider exchange of a run and replay it exactly, offline.

Recording wraps the real HTTP transport: each request body and the full response (status,
content type, body text, streamed or not) is appended to a cassette. Replay serves the
recorded responses in order; a request that differs from the recording is reported as a
mismatch (and fails in strict mode), so a replayed suite proves the harness still asks the
same questions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from driveros._atomic import write_atomic
from driveros._errors import DriverosError
from driveros._safe_open import anchor

if TYPE_CHECKING:
    import httpx


class CassetteError(DriverosError):
    """A cassette is missing, unreadable, exhausted or (strict mode) does not match."""


class Interaction(BaseModel):
    model_config = ConfigDict(frozen=True)

    method: str
    path: str
    request: Any = None
    status: int
    content_type: str = "application/json"
    body: str


class Cassette(BaseModel):
    provider: str
    model: str
    base_url: str = ""
    #: The workspace path of the recorded run; replay compares requests with it normalized,
    #: since tool output (tracebacks, pwd) names wherever the case happened to run.
    workspace: str = ""
    interactions: list[Interaction] = Field(default_factory=list)

    def save(self, path: Path) -> None:
        """Replace ``path`` atomically; below the working directory (a suite in a repository)
        no planted link is followed on the way (:mod:`driveros._safe_open`)."""
        data = (self.model_dump_json(indent=1) + "\n").encode("utf-8")
        write_atomic(path, data, perms=0o644, root=anchor(path, Path.cwd())[0])

    @classmethod
    def load(cls, path: Path) -> Cassette:
        try:
            return cls.model_validate_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise CassetteError(
                f"no cassette at {path}: record it first (driveros eval run --record)",
                path=str(path),
            ) from exc
        except ValueError as exc:
            raise CassetteError(f"cassette {path} is unreadable: {exc}", path=str(path)) from exc


def _body(request: httpx.Request) -> Any:
    raw = request.content
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode("utf-8", "replace")


def _normalized(value: Any, workspace: str) -> str:
    text = json.dumps(value, sort_keys=True)
    return text.replace(workspace, "<workspace>") if workspace else text


def recording_client(cassette: Cassette, *, timeout: float = 120.0) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` that talks to the network and appends to ``cassette``."""
    import httpx

    class _Recorder(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self._inner = httpx.AsyncHTTPTransport()

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            response = await self._inner.handle_async_request(request)
            try:
                body = await response.aread()
            finally:
                await response.aclose()
            content_type = response.headers.get("content-type", "application/json")
            cassette.interactions.append(
                Interaction(
                    method=request.method,
                    path=request.url.path,
                    request=_body(request),
                    status=response.status_code,
                    content_type=content_type,
                    body=body.decode("utf-8", "replace"),
                )
            )
            headers = {"content-type": content_type}
            return httpx.Response(response.status_code, headers=headers, content=body)

        async def aclose(self) -> None:
            await self._inner.aclose()

    return httpx.AsyncClient(transport=_Recorder(), timeout=timeout)


class ReplayLog(BaseModel):
    served: int = 0
    mismatches: list[str] = Field(default_factory=list)


def replay_client(
    cassette: Cassette, log: ReplayLog, *, strict: bool = False, workspace: str = ""
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` that never touches the network: it serves ``cassette``."""
    import httpx

    interactions = list(cassette.interactions)

    async def handler(request: httpx.Request) -> httpx.Response:
        index = log.served
        if index >= len(interactions):
            raise CassetteError(
                f"the run made more requests than the cassette holds ({len(interactions)})"
            )
        recorded = interactions[index]
        log.served += 1
        expected = _normalized(recorded.request, cassette.workspace)
        if recorded.path != request.url.path or expected != _normalized(_body(request), workspace):
            note = f"request {index + 1} differs from the recording ({request.url.path})"
            log.mismatches.append(note)
            if strict:
                raise CassetteError(note)
        return httpx.Response(
            recorded.status, headers={"content-type": recorded.content_type}, content=recorded.body
        )

    return httpx.AsyncClient(
        transport=httpx.MockTransport(handler), base_url=cassette.base_url or "http://replay"
    )
