"""The scripted model server speaks the real OpenAI and Anthropic wire formats."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

import httpx

from driveros.testing import (
    EXHAUSTED_TEXT,
    ScriptedError,
    ScriptedModelServer,
    ToolCallSpec,
    Turn,
    TurnUsage,
)


def _sse_data(text: str) -> list[str]:
    return [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]


def _sse_events(text: str) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


TOOL_TURN = Turn(
    text="Let me look.",
    thinking="I should list the files first.",
    tool_calls=[ToolCallSpec("run", {"command": "ls -la"}), ToolCallSpec("list_files", {})],
    usage=TurnUsage(input_tokens=50, output_tokens=7, cache_read_tokens=10),
)


async def test_scripted_openai_stream_splits_tool_calls_and_reports_usage() -> None:
    async with ScriptedModelServer([TOOL_TURN]) as server, httpx.AsyncClient() as client:
        body = {
            "model": "m",
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "hi"}],
        }
        resp = await client.post(f"{server.openai_base_url}/chat/completions", json=body)
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        data = _sse_data(resp.text)
        assert data[-1] == "[DONE]"
        chunks = [json.loads(d) for d in data[:-1]]
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks[:-1])
        reasoning = "".join(c["choices"][0]["delta"].get("reasoning") or "" for c in chunks[:-1])
        calls: dict[int, dict[str, str]] = {}
        fragments = 0
        for c in chunks[:-1]:
            for tc in c["choices"][0]["delta"].get("tool_calls", []):
                entry = calls.setdefault(tc["index"], {"id": "", "name": "", "arguments": ""})
                entry["id"] += tc.get("id", "")
                entry["name"] += tc.get("function", {}).get("name", "")
                entry["arguments"] += tc.get("function", {}).get("arguments", "")
                fragments += 1
        finish = [c["choices"][0]["finish_reason"] for c in chunks[:-1]]
        usage_chunk = chunks[-1]
    assert text == "Let me look."
    assert reasoning == "I should list the files first."
    assert fragments > 3, "arguments must arrive in several fragments"
    assert [(v["name"], json.loads(v["arguments"])) for _, v in sorted(calls.items())] == [
        ("run", {"command": "ls -la"}),
        ("list_files", {}),
    ]
    assert all(v["id"].startswith("call_") for v in calls.values())
    assert finish[-1] == "tool_calls" and set(finish[:-1]) == {None}
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["prompt_tokens"] == 50
    assert usage_chunk["usage"]["completion_tokens"] == 7
    assert server.requests == [body]


async def test_scripted_openai_nonstream_returns_completion_object() -> None:
    turns = [Turn(tool_calls=[ToolCallSpec("read_file", {"path": "a.py"}, id="c1")])]
    async with ScriptedModelServer(turns) as server, httpx.AsyncClient() as client:
        resp = await client.post(
            f"{server.openai_base_url}/chat/completions", json={"model": "x", "messages": []}
        )
    data = resp.json()
    assert data["object"] == "chat.completion"
    choice = data["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
        }
    ]
    assert data["usage"]["total_tokens"] == 120


async def test_scripted_openai_stream_without_include_usage_has_no_usage_chunk() -> None:
    async with ScriptedModelServer([Turn(text="hello")]) as server, httpx.AsyncClient() as c:
        resp = await c.post(
            f"{server.openai_base_url}/chat/completions", json={"stream": True, "messages": []}
        )
    chunks = [json.loads(d) for d in _sse_data(resp.text)[:-1]]
    assert all(c["choices"] for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


async def test_scripted_paced_stream_arrives_in_separate_reads_with_the_same_content() -> None:
    turns = [Turn(text="hello paced world"), Turn(text="hello paced world", interval_s=0.02)]
    bodies: list[list[str]] = []
    reads: list[int] = []
    async with ScriptedModelServer(turns, chunk=5) as server, httpx.AsyncClient() as c:
        for _ in turns:
            req = c.build_request(
                "POST",
                f"{server.openai_base_url}/chat/completions",
                json={"stream": True, "messages": []},
            )
            resp = await c.send(req, stream=True)
            parts = [part async for part in resp.aiter_raw()]
            await resp.aclose()
            reads.append(len(parts))
            bodies.append(_sse_data(b"".join(parts).decode()))
    strip = [[json.loads(d).get("choices") for d in body[:-1]] for body in bodies]
    assert strip[0] == strip[1]  # pacing changes when frames arrive, not what they say
    assert reads[1] >= len(bodies[1]) // 2  # paced frames arrive (mostly) one per read


async def test_scripted_anthropic_stream_emits_the_messages_event_sequence() -> None:
    async with ScriptedModelServer([TOOL_TURN]) as server, httpx.AsyncClient() as client:
        resp = await client.post(
            f"{server.anthropic_base_url}/v1/messages",
            json={"model": "claude", "stream": True, "max_tokens": 10, "messages": []},
        )
    events = _sse_events(resp.text)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert all(data["type"] == name for name, data in events)
    starts = [d["content_block"]["type"] for n, d in events if n == "content_block_start"]
    assert starts == ["thinking", "text", "tool_use", "tool_use"]
    deltas = [d["delta"] for n, d in events if n == "content_block_delta"]
    kinds = {d["type"] for d in deltas}
    assert kinds == {"thinking_delta", "signature_delta", "text_delta", "input_json_delta"}
    thinking = "".join(d.get("thinking", "") for d in deltas)
    assert thinking == "I should list the files first."
    tool_json: dict[int, str] = {}
    for n, d in events:
        if n == "content_block_delta" and d["delta"]["type"] == "input_json_delta":
            tool_json[d["index"]] = tool_json.get(d["index"], "") + d["delta"]["partial_json"]
    assert [json.loads(v) for _, v in sorted(tool_json.items())] == [{"command": "ls -la"}, {}]
    start_usage = events[0][1]["message"]["usage"]
    assert start_usage["input_tokens"] == 40 and start_usage["cache_read_input_tokens"] == 10
    final = next(d for n, d in events if n == "message_delta")
    assert final["delta"]["stop_reason"] == "tool_use"
    assert final["usage"]["output_tokens"] == 7


async def test_scripted_anthropic_nonstream_returns_message_object() -> None:
    turn = Turn(text="All good.", thinking="hmm", signature="sig-1")
    async with ScriptedModelServer([turn]) as server, httpx.AsyncClient() as client:
        resp = await client.post(
            f"{server.anthropic_base_url}/v1/messages", json={"model": "c", "messages": []}
        )
    data = resp.json()
    assert data["type"] == "message"
    assert data["content"] == [
        {"type": "thinking", "thinking": "hmm", "signature": "sig-1"},
        {"type": "text", "text": "All good."},
    ]
    assert data["stop_reason"] == "end_turn"


async def test_scripted_errors_use_each_endpoints_error_shape() -> None:
    turns = [
        Turn(error=ScriptedError(429, headers={"retry-after": "0"})),
        Turn(error=ScriptedError(529)),
        Turn(text="recovered"),
    ]
    async with ScriptedModelServer(turns) as server, httpx.AsyncClient() as client:
        first = await client.post(f"{server.openai_base_url}/chat/completions", json={})
        second = await client.post(f"{server.anthropic_base_url}/v1/messages", json={})
        third = await client.post(f"{server.anthropic_base_url}/v1/messages", json={})
    assert first.status_code == 429 and first.headers["retry-after"] == "0"
    assert first.json()["error"]["code"] == "rate_limit_exceeded"
    assert second.status_code == 529
    assert second.json()["error"]["type"] == "overloaded_error"
    assert third.json()["content"][0]["text"] == "recovered"


async def test_scripted_exhausted_script_answers_clear_text_or_repeats_last() -> None:
    async with ScriptedModelServer([Turn(text="one")]) as server, httpx.AsyncClient() as c:
        url = f"{server.openai_base_url}/chat/completions"
        answers = [(await c.post(url, json={})).json() for _ in range(2)]
    texts = [a["choices"][0]["message"]["content"] for a in answers]
    assert texts == ["one", EXHAUSTED_TEXT]
    repeat = ScriptedModelServer([Turn(text="again")], repeat_last=True)
    async with repeat as server, httpx.AsyncClient() as c:
        url = f"{server.openai_base_url}/chat/completions"
        answers = [(await c.post(url, json={})).json() for _ in range(3)]
    assert [a["choices"][0]["message"]["content"] for a in answers] == ["again"] * 3


async def test_scripted_server_closes_while_a_delayed_turn_waits() -> None:
    server = ScriptedModelServer([Turn(text="late", delay_s=30)])
    await server.start()
    async with httpx.AsyncClient() as client:
        pending = asyncio.create_task(
            client.post(f"{server.openai_base_url}/chat/completions", json={})
        )
        while not server.received:
            await asyncio.sleep(0.01)
        await server.aclose()
        try:
            await pending
        except httpx.HTTPError:
            pass
        else:
            raise AssertionError("the delayed request should fail once the server closed")


async def test_scripted_process_prints_urls_and_stops_on_sigterm(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from a file"}]))
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "driveros.testing.scripted",
        "--script",
        str(script),
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    info = json.loads(await proc.stdout.readline())
    assert info["openai_base_url"] == f"http://127.0.0.1:{info['port']}/v1"
    assert info["anthropic_base_url"] == f"http://127.0.0.1:{info['port']}"
    async with httpx.AsyncClient() as client:
        resp = await client.post(f"{info['anthropic_base_url']}/v1/messages", json={})
    assert resp.json()["content"][0]["text"] == "from a file"
    proc.send_signal(signal.SIGTERM)
    assert await proc.wait() == 0


def test_testing_public_all_is_sorted_and_importable() -> None:
    import driveros.testing as testing

    assert list(testing.__all__) == sorted(testing.__all__)
    assert all(hasattr(testing, name) for name in testing.__all__)
