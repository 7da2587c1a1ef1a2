"""StreamDone.response equals generate() for the same wire data, on both wire formats."""

from __future__ import annotations

import pytest

from driveros import llm
from driveros.llm import anthropic, openaicompat
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn, TurnUsage

TURNS = [
    Turn(text="Plain answer with ünïcödé — 世界 🌍."),
    Turn(
        thinking="Let me think step by step about the file.",
        signature="EqQBCkYIBxgCKkA-fixed-signature",
        text="I'll read it.",
        tool_calls=[
            ToolCallSpec(name="read_file", arguments={"path": "a.py"}, id="call_a"),
            ToolCallSpec(name="list_files", arguments={}, id="call_b"),
        ],
        usage=TurnUsage(input_tokens=120, output_tokens=30, cache_read_tokens=100),
    ),
    Turn(text="cut off", stop_reason="max_tokens"),
]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("turn", TURNS, ids=["text", "thinking_tools", "max_tokens"])
async def test_stream_done_equals_generate(wire: str, turn: Turn) -> None:
    async with ScriptedModelServer([turn, turn], chunk=3) as server:
        provider: llm.Provider
        if wire == "openai":
            provider = openaicompat.OpenAICompatProvider(
                "m", name="scripted", base_url=server.openai_base_url, api_key="k"
            )
        else:
            provider = anthropic.claude("m", api_key="k", base_url=server.anthropic_base_url)
        req = llm.Request(messages=[llm.user("go")])
        generated = await provider.generate(req)
        events = [e async for e in provider.stream(req)]
        await provider.aclose()
    done = events[-1]
    assert isinstance(done, llm.StreamDone)
    streamed = done.response
    # Response ids are minted per request by the server; everything else must match.
    assert streamed.model_copy(update={"id": None}) == generated.model_copy(update={"id": None})
    assert streamed.text() == turn.text
    assert [c.id for c in streamed.tool_calls] == [c.id for c in turn.tool_calls if c.id]
    if turn.thinking:
        assert streamed.thinking[0].text == turn.thinking
    deltas = "".join(e.text for e in events if isinstance(e, llm.TextDelta))
    assert deltas == turn.text
