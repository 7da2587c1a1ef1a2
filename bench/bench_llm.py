"""LLM driver overhead vs the official SDKs, side by side, as ratios (never pass/fail).

    python -m bench llm           # or: make bench ARGS=llm

A loopback HTTP server runs in a subprocess and answers every client with the same bytes:
a small Chat Completions / Messages JSON body for the per-request overhead, and a long SSE
stream for parsing throughput. Each client does the same number of calls; we print time per
call and ``ratio = driveros / sdk`` (<= 1.0 means we are at least as fast). The official
``openai`` and ``anthropic`` SDKs are measured when importable (``pip install -e '.[bench]'``);
otherwise their rows say "not installed". Import time is measured in fresh interpreters.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench._results import Row, ratio, report

GENERATE_CALLS = 300
STREAM_CALLS = 15
STREAM_DELTAS = 3000
IMPORT_RUNS = 5

# ----------------------------------------------------------------------------- payloads


def _openai_json() -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 1,
            "model": "bench-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Goroutines are green threads."},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
        }
    ).encode()


def _openai_sse() -> bytes:
    frames = []
    for i in range(STREAM_DELTAS):
        chunk = {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "bench-model",
            "choices": [{"index": 0, "delta": {"content": f"tok{i} "}, "finish_reason": None}],
        }
        frames.append(f"data: {json.dumps(chunk)}\n\n")
    last = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "bench-model",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": STREAM_DELTAS, "total_tokens": 9},
    }
    frames.append(f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n")
    return "".join(frames).encode()


def _anthropic_json() -> bytes:
    return json.dumps(
        {
            "id": "msg_bench",
            "type": "message",
            "role": "assistant",
            "model": "bench-model",
            "content": [{"type": "text", "text": "Goroutines are green threads."}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 7},
        }
    ).encode()


def _anthropic_sse() -> bytes:
    def event(name: str, data: dict[str, Any]) -> str:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n"

    start = {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "bench-model",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 1},
    }
    out = [
        event("message_start", {"type": "message_start", "message": start}),
        event(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    for i in range(STREAM_DELTAS):
        out.append(
            event(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": f"tok{i} "},
                },
            )
        )
    out.append(event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    out.append(
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": STREAM_DELTAS},
            },
        )
    )
    out.append(event("message_stop", {"type": "message_stop"}))
    return "".join(out).encode()


# ----------------------------------------------------------------------------- server


async def _serve() -> None:
    bodies = {
        ("/v1/chat/completions", False): (_openai_json(), "application/json"),
        ("/v1/chat/completions", True): (_openai_sse(), "text/event-stream"),
        ("/v1/messages", False): (_anthropic_json(), "application/json"),
        ("/v1/messages", True): (_anthropic_sse(), "text/event-stream"),
    }

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split()[1].split("?")[0]
                length = 0
                for line in lines[1:]:
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                body = await reader.readexactly(length)
                streaming = b'"stream":true' in body.replace(b" ", b"")
                payload, ctype = bodies[(path, streaming)]
                writer.write(
                    (
                        f"HTTP/1.1 200 OK\r\ncontent-type: {ctype}\r\n"
                        f"content-length: {len(payload)}\r\n\r\n"
                    ).encode()
                    + payload
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


@contextlib.contextmanager
def _server() -> Any:
    proc = subprocess.Popen(
        [sys.executable, "-c", "import asyncio, bench.bench_llm as b; asyncio.run(b._serve())"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait()


# ----------------------------------------------------------------------------- clients

Call = Callable[[], Awaitable[Any]]


async def _time(call: Call, n: int, warmup: int = 10) -> float:
    for _ in range(warmup):
        await call()
    start = time.perf_counter()
    for _ in range(n):
        await call()
    return (time.perf_counter() - start) / n


def _installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


async def _ours(url: str) -> dict[str, tuple[Call, Call]]:
    from driveros import llm
    from driveros.llm import anthropic, openaicompat

    req = llm.Request(messages=[llm.user("Explain goroutines in one sentence.")], max_tokens=200)
    oai = openaicompat.OpenAICompatProvider(
        "bench-model",
        base_url=url + "/v1",
        api_key="k",
        settings=llm.HTTPSettings(retry=llm.RetryPolicy(max_retries=0)),
    )
    ant = anthropic.claude(
        "bench-model", api_key="k", base_url=url, retry=llm.RetryPolicy(max_retries=0)
    )

    async def drain(provider: llm.Provider) -> None:
        async for _ in provider.stream(req):
            pass

    return {
        "openai": (lambda: oai.generate(req), lambda: drain(oai)),
        "anthropic": (lambda: ant.generate(req), lambda: drain(ant)),
    }


async def _openai_sdk(url: str) -> tuple[Call, Call] | None:
    if not _installed("openai"):
        return None
    import openai

    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
    messages: Any = [{"role": "user", "content": "Explain goroutines in one sentence."}]

    async def generate() -> None:
        await client.chat.completions.create(model="bench-model", messages=messages, max_tokens=200)

    async def stream() -> None:
        s = await client.chat.completions.create(
            model="bench-model",
            messages=messages,
            max_tokens=200,
            stream=True,
            stream_options={"include_usage": True},
        )
        async for _ in s:
            pass

    return generate, stream


async def _anthropic_sdk(url: str) -> tuple[Call, Call] | None:
    if not _installed("anthropic"):
        return None
    import anthropic

    client = anthropic.AsyncAnthropic(base_url=url, api_key="k", max_retries=0)
    messages: Any = [{"role": "user", "content": "Explain goroutines in one sentence."}]

    async def generate() -> None:
        await client.messages.create(model="bench-model", messages=messages, max_tokens=200)

    async def stream() -> None:
        s = await client.messages.create(
            model="bench-model", messages=messages, max_tokens=200, stream=True
        )
        async for _ in s:
            pass

    return generate, stream


#: What this run measured, reported into bench/RESULTS.md at the end.
ROWS: list[Row] = []


def _row(label: str, ours: float, theirs: float | None, unit: str) -> str:
    where = " (`make bench ARGS=llm`)" if not ROWS else " (same run)"
    ROWS.append(
        Row(
            benchmark=f"LLM driver, {label}{where}",
            measured=f"{ours * 1e6:.1f} {unit}",
            baseline="SDK not installed" if theirs is None else f"{theirs * 1e6:.1f} {unit} SDK",
            ratio="n/a" if theirs is None else ratio(ours, theirs),
            goal="<= 1.0x the SDK"
            + ("" if theirs is None else (": met" if ours <= theirs else ": not met")),
        )
    )
    if theirs is None:
        return f"  {label:<34} driveros {ours * 1e6:9.1f} {unit}   sdk: not installed"
    return (
        f"  {label:<34} driveros {ours * 1e6:9.1f} {unit}   sdk {theirs * 1e6:9.1f} {unit}"
        f"   ratio {ours / theirs:5.2f}"
    )


async def _clients(url: str) -> None:
    ours = await _ours(url)
    sdks = {"openai": await _openai_sdk(url), "anthropic": await _anthropic_sdk(url)}
    print(f"per-request overhead, generate() x{GENERATE_CALLS} (lower is better)")
    for wire in ("openai", "anthropic"):
        mine = await _time(ours[wire][0], GENERATE_CALLS)
        sdk = sdks[wire]
        theirs = await _time(sdk[0], GENERATE_CALLS) if sdk else None
        print(_row(f"per-request overhead, {wire} wire", mine, theirs, "us/call"))
    print(f"stream parsing, {STREAM_DELTAS} deltas x{STREAM_CALLS} streams (lower is better)")
    for wire in ("openai", "anthropic"):
        mine = await _time(ours[wire][1], STREAM_CALLS, warmup=2)
        sdk = sdks[wire]
        theirs = await _time(sdk[1], STREAM_CALLS, warmup=2) if sdk else None
        per_delta_ours = mine / STREAM_DELTAS
        per_delta_theirs = theirs / STREAM_DELTAS if theirs is not None else None
        label = f"stream parsing, {wire} SSE, {STREAM_DELTAS} deltas"
        print(_row(label, per_delta_ours, per_delta_theirs, "us/delta"))
    for name in ("litellm", "pydantic_ai"):
        state = "installed, not measured" if _installed(name) else "not installed"
        print(f"  {name:<34} {state}")


def _import_time(module: str) -> float | None:
    if module != "driveros.llm" and not _installed(module):
        return None
    samples = []
    for _ in range(IMPORT_RUNS):
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                f"import time; t = time.perf_counter(); import {module}; "
                "print(time.perf_counter() - t)",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        samples.append(float(out.stdout.strip()))
    return statistics.median(samples)


def main() -> None:
    print(f"python {sys.version.split()[0]}; same loopback server and payloads for every client")
    with _server() as url:
        asyncio.run(_clients(url))
    ours = _import_time("driveros.llm")
    assert ours is not None
    print(f"import time, median of {IMPORT_RUNS} fresh interpreters (lower is better)")
    print(f"  {'import driveros.llm':<34} {ours * 1e3:7.1f} ms")
    for module in ("openai", "anthropic"):
        theirs = _import_time(module)
        if theirs is None:
            print(f"  {'import ' + module:<34} not installed")
        else:
            print(
                f"  {'import ' + module:<34} {theirs * 1e3:7.1f} ms"
                f"   ratio driveros/{module} {ours / theirs:5.2f}"
            )
        ROWS.append(
            Row(
                benchmark=f"LLM driver, `import driveros.llm` vs `import {module}`, median of "
                f"{IMPORT_RUNS} fresh interpreters (same run)",
                measured=f"{ours * 1e3:.1f} ms",
                baseline="not installed" if theirs is None else f"{theirs * 1e3:.1f} ms",
                ratio="n/a" if theirs is None else ratio(ours, theirs),
            )
        )
    report("llm", ROWS)


if __name__ == "__main__":
    main()
