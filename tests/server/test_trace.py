"""TraceChannel: deltas are coalesced, other events keep their order, channels by capability."""

from __future__ import annotations

import asyncio
from typing import Any

from driveros.agent import Result, Text, ToolCall, TurnStarted
from driveros_lsp._trace import TraceChannel, TraceSender, TraceTargets


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []
        self.created = asyncio.Event()

    def sender(self) -> TraceSender:
        async def create(token: str) -> None:
            self.sent.append(("create", token))

        return TraceSender(
            notify=lambda method, params: self.sent.append((method, params)),
            create_progress=create,
            progress=lambda token, value: self.sent.append(("$/progress", value)),
            log=lambda line: self.sent.append(("log", line)),
        )


def _channel(rec: Recorder, targets: TraceTargets) -> TraceChannel:
    # an hour-long interval: everything after the first flush waits for finish()
    return TraceChannel(
        run_id="r1", title="task", token="t", targets=targets, sender=rec.sender(), interval=3600
    )


async def test_trace_deltas_within_an_interval_become_one_event() -> None:
    rec = Recorder()
    channel = _channel(rec, TraceTargets(progress=True, trace=True))
    channel.push(TurnStarted(run_id="r1", seq=1, turn=1))
    await asyncio.sleep(0.01)  # first flush goes out at once
    for i in range(500):
        channel.push(Text(run_id="r1", seq=2 + i, turn=1, text="x"))
    channel.push(ToolCall(run_id="r1", seq=600, turn=1, call_id="c", name="run"))
    channel.push(Text(run_id="r1", seq=601, turn=1, text="y"))
    channel.push(Result(run_id="r1", seq=602, outcome="answered", exit_code=0))
    channel.finish("answered")
    await channel.wait_closed()

    traces = [p["event"] for m, p in rec.sent if m == "driveros/trace"]
    assert [(e["type"], e["seq"], e.get("text")) for e in traces] == [
        ("turn_started", 1, None),
        ("text", 2, "x" * 500),
        ("tool_call", 600, None),
        ("text", 601, "y"),
        ("result", 602, None),
    ]
    progress = [v for m, v in rec.sent if m == "$/progress"]
    assert progress == [
        {"kind": "begin", "title": "driveros", "message": "task", "cancellable": True},
        {"kind": "report", "message": "turn 1"},
        {"kind": "report", "message": "turn 1: writing"},
        {"kind": "end", "message": "answered"},
    ]
    assert rec.sent[0] == ("create", "t")


async def test_trace_holds_the_result_until_the_run_is_settled() -> None:
    rec = Recorder()
    channel = _channel(rec, TraceTargets(progress=True, trace=True))
    channel.push(Result(run_id="r1", seq=2, outcome="canceled", exit_code=7))
    channel.push(TurnStarted(run_id="r1", seq=1, turn=1))
    async with asyncio.timeout(60):  # the first flush sends what was pushed, but the result
        while not (traces := [p["event"] for m, p in rec.sent if m == "driveros/trace"]):
            await asyncio.sleep(0.01)
    assert [e["type"] for e in traces] == ["turn_started"]
    channel.finish("canceled", then=lambda: rec.sent.append(("then", None)))
    await channel.wait_closed()
    assert [m if m != "driveros/trace" else p["event"]["type"] for m, p in rec.sent[-3:]] == [
        "result",
        "then",
        "$/progress",
    ]
    assert rec.sent[-1][1] == {"kind": "end", "message": "canceled"}


async def test_trace_falls_back_to_log_lines() -> None:
    rec = Recorder()
    channel = _channel(rec, TraceTargets(progress=False, trace=False))
    channel.push(ToolCall(run_id="r1", seq=1, turn=1, call_id="c", name="run"))
    channel.finish("done")
    await channel.wait_closed()
    assert rec.sent == [("log", "[driveros r1] tool run {}")]


def test_trace_channels_follow_the_client_capabilities() -> None:
    from lsprotocol import types as lsp
    from pytest_lsp import client_capabilities

    from driveros_lsp._editor import ClientTraits

    vscode = ClientTraits.from_capabilities(client_capabilities("visual-studio-code"), "utf-16")
    neovim = ClientTraits.from_capabilities(client_capabilities("neovim@v0.11.0"), "utf-8")
    bare = ClientTraits.from_capabilities(lsp.ClientCapabilities(), "utf-16")
    opted = ClientTraits.from_capabilities(
        lsp.ClientCapabilities(experimental={"driverosTrace": True}), "utf-32"
    )
    assert (vscode.annotations, vscode.progress, vscode.trace, vscode.encoding) == (
        True,
        True,
        False,
        "utf-16",
    )
    assert (neovim.annotations, neovim.progress, neovim.encoding) == (False, True, "utf-8")
    assert TraceTargets(progress=bare.progress, trace=bare.trace).log
    assert (opted.trace, opted.encoding) == (True, "utf-32")
