"""The native Messages adapter against recorded real traffic, re-chunked at random."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from driveros import llm
from driveros.llm import anthropic
from tests.llm.conftest import Interaction, Replay

Cassette = Callable[[str], list[Interaction]]
SEEDS = (0, 1, 2)


async def _stream(provider: llm.Provider, req: llm.Request) -> tuple[list[Any], llm.Response]:
    events = [e async for e in provider.stream(req)]
    assert isinstance(events[-1], llm.StreamDone)
    return events[:-1], events[-1].response


def _claude(
    replay: Replay, model: str = "claude-sonnet-4-5", **kw: Any
) -> anthropic.AnthropicProvider:
    return anthropic.claude(model, api_key="sk-ant-test", http_client=replay.client(), **kw)


def _ask(text: str = "hi", **kw: Any) -> llm.Request:
    return llm.Request(messages=[llm.user(text)], **kw)


def _recorded_messages(item: Interaction) -> list[dict[str, Any]]:
    return list(item.request_body["messages"])


@pytest.mark.parametrize("seed", SEEDS)
async def test_anthropic_thinking_stream_with_signature(cassette: Cassette, seed: int) -> None:
    path = "anthropic/pydanticai__test_anthropic_model_thinking_part_stream.yaml"
    replay = Replay(cassette(path), seed=seed)
    events, resp = await _stream(_claude(replay), _ask("How do I cross the street?", thinking=True))
    [thinking] = resp.thinking
    assert thinking.text.startswith("This is a straightforward question about pedestrian safety.")
    assert thinking.signature and thinking.signature.startswith("EvMCCkYICxgCKkCHP2c")
    assert thinking.provider == "anthropic"
    assert "".join(e.text for e in events if isinstance(e, llm.ThinkingDelta)) == thinking.text
    assert any(isinstance(e, llm.ThinkingDelta) and e.signature for e in events)
    assert "".join(e.text for e in events if isinstance(e, llm.TextDelta)) == resp.text()
    assert resp.stop_reason is llm.StopReason.END_TURN
    assert (resp.usage.input_tokens, resp.usage.output_tokens) == (43, 282)
    sent = replay.sent[0]
    assert sent.url.path == "/v1/messages"
    assert sent.headers["x-api-key"] == "sk-ant-test"
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers
    body = replay.sent_json(0)
    assert body["stream"] is True
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert body["max_tokens"] > body["thinking"]["budget_tokens"]


async def test_anthropic_thinking_replayed_unmodified_across_tool_turn(cassette: Cassette) -> None:
    turns = cassette("anthropic/pydanticai__test_anthropic_tool_with_thinking.yaml")
    replay = Replay(turns)
    provider = _claude(replay, "claude-sonnet-4-0")
    tool = llm.ToolSpec(
        name="get_user_country",
        parameters={"additionalProperties": False, "properties": {}, "type": "object"},
    )
    question = llm.user("What is the largest city in the user country?")
    resp = await provider.generate(
        llm.Request(messages=[question], tools=[tool], thinking=True, thinking_budget=3000)
    )
    assert [p.kind for p in resp.parts] == ["thinking", "text", "tool_call"]
    assert resp.stop_reason is llm.StopReason.TOOL_USE
    [call] = resp.tool_calls
    history = [
        question,
        resp.message(),
        llm.tool_results(
            llm.ToolResultPart(tool_call_id=call.id, name=call.name, content="Mexico")
        ),
    ]
    resp2 = await provider.generate(
        llm.Request(messages=history, tools=[tool], thinking=True, thinking_budget=3000)
    )
    assert "Mexico City" in resp2.text()
    sent = replay.sent_json(1)
    recorded = _recorded_messages(turns[1])
    # Signed thinking, text and tool_use go back byte for byte and in order.
    assert sent["messages"][1] == recorded[1]
    assert sent["messages"][2]["content"][0]["tool_use_id"] == call.id
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 3000}


@pytest.mark.parametrize("seed", SEEDS)
async def test_anthropic_stream_thinking_tool_chain_replay(cassette: Cassette, seed: int) -> None:
    turns = cassette(
        "anthropic/llm-anthropic__test_fixed_version_tool_chain_with_thinking_display_regression.yaml"
    )
    replay = Replay(turns, seed=seed)
    provider = _claude(replay, "claude-haiku-4-5-20251001")
    tool = llm.ToolSpec(name="fixed_version", description="Return a fixed test version string")
    question = llm.user(
        "Use the fixed_version tool. Then tell me the version and make one short joke about it."
        " Think about it first."
    )
    events, resp = await _stream(
        provider, llm.Request(messages=[question], tools=[tool], thinking_budget=1024)
    )
    assert [p.kind for p in resp.parts] == ["thinking", "tool_call"]
    [call] = resp.tool_calls
    assert call.arguments == {}
    assert any(isinstance(e, llm.ToolCallDelta) and e.name == "fixed_version" for e in events)
    assert resp.usage.reasoning_tokens == 53
    history = [
        question,
        resp.message(),
        llm.tool_results(llm.ToolResultPart(tool_call_id=call.id, content="0.32a0")),
    ]
    _, resp2 = await _stream(
        provider, llm.Request(messages=history, tools=[tool], thinking_budget=1024)
    )
    assert "0.32a0" in resp2.text()
    recorded = _recorded_messages(turns[1])
    sent = replay.sent_json(1)["messages"]
    assert sent[1] == recorded[1]
    assert sent[2] == recorded[2]
    # The recorded request headers carry the same API version we send.
    assert (
        replay.sent[1].headers["anthropic-version"] == turns[1].request_headers["anthropic-version"]
    )


@pytest.mark.parametrize("stream", [False, True])
async def test_anthropic_redacted_thinking_replayed(cassette: Cassette, stream: bool) -> None:
    suffix = "_stream" if stream else ""
    turns = cassette(
        f"anthropic/pydanticai__test_anthropic_model_thinking_part_redacted{suffix}.yaml"
    )
    replay = Replay(turns, seed=4)
    provider = _claude(replay, "claude-sonnet-4-5-20250929")
    question = llm.user(turns[0].request_body["messages"][0]["content"][0]["text"])
    req = llm.Request(messages=[question], thinking_budget=1024)
    resp = (await _stream(provider, req))[1] if stream else await provider.generate(req)
    assert resp.thinking
    for thinking in resp.thinking:
        assert thinking.text == "" and thinking.redacted and thinking.signature is None
    if len(turns) < 2:
        return
    follow = llm.Request(
        messages=[question, resp.message(), llm.user("What was that?")], thinking_budget=1024
    )
    await (_stream(provider, follow) if stream else provider.generate(follow))
    recorded = _recorded_messages(turns[1])
    assert replay.sent_json(1)["messages"][1] == recorded[1]


async def test_anthropic_parallel_tool_results_in_one_user_turn(cassette: Cassette) -> None:
    turns = cassette("anthropic/pydanticai__test_multiple_parallel_tool_calls.yaml")
    replay = Replay(turns)
    provider = _claude(replay, "claude-haiku-4-5")
    body = turns[0].request_body
    tool = llm.ToolSpec(
        name="retrieve_entity_info",
        description="Get the knowledge about the given entity.",
        parameters=body["tools"][0]["input_schema"],
    )
    history = [llm.system(body["system"]), llm.user(body["messages"][0]["content"][0]["text"])]
    resp = await provider.generate(llm.Request(messages=history, tools=[tool], tool_choice="auto"))
    names = [c.arguments["name"] for c in resp.tool_calls]
    assert names == ["Alice", "Bob", "Charlie", "Daisy"]
    recorded_results = turns[1].request_body["messages"][2]["content"]
    results = [
        llm.ToolResultPart(tool_call_id=c.id, content=r["content"])
        for c, r in zip(resp.tool_calls, recorded_results, strict=True)
    ]
    history += [resp.message(), llm.tool_results(*results)]
    resp2 = await provider.generate(llm.Request(messages=history, tools=[tool], tool_choice="auto"))
    assert "Daisy" in resp2.text()
    sent = replay.sent_json(1)
    assert sent["messages"][1] == turns[1].request_body["messages"][1]
    assert [b["tool_use_id"] for b in sent["messages"][2]["content"]] == [
        b["tool_use_id"] for b in recorded_results
    ]
    assert sent["system"] == [{"type": "text", "text": body["system"]}]
    assert sent["tool_choice"] == {"type": "auto"}


async def test_anthropic_effort_maps_to_output_config(cassette: Cassette) -> None:
    turns = cassette("anthropic/pydanticai__test_anthropic_opus_46_features[effort].yaml")
    replay = Replay(turns)
    resp = await _claude(replay, "claude-opus-4-6").generate(_ask("What is 2+2?", effort="low"))
    assert resp.text() == "4"
    sent = replay.sent_json(0)
    assert sent["output_config"] == {"effort": "low"}
    assert "thinking" not in sent
    assert sent == {k: v for k, v in turns[0].request_body.items() if k != "stream"}


async def test_anthropic_adaptive_thinking_request(cassette: Cassette) -> None:
    turns = cassette(
        "anthropic/pydanticai__test_anthropic_opus_46_features[adaptive-thinking].yaml"
    )
    replay = Replay(turns)
    resp = await _claude(replay, "claude-opus-4-6").generate(_ask("What is 2+2?", thinking=True))
    assert resp.thinking[0].signature
    assert replay.sent_json(0)["thinking"] == {"type": "adaptive"}


async def test_anthropic_opus_5_effort_xhigh_and_thinking_tokens(cassette: Cassette) -> None:
    replay = Replay(cassette("anthropic/pydanticai__test_anthropic_opus_5_features.yaml"))
    resp = await _claude(replay, "claude-opus-5").generate(
        _ask("What is 2+2?", thinking=True, effort="xhigh")
    )
    assert resp.text() == "2 + 2 = 4"
    assert resp.usage.reasoning_tokens == 33
    sent = replay.sent_json(0)
    assert sent["output_config"] == {"effort": "xhigh"}
    assert sent["thinking"] == {"type": "adaptive"}


async def test_anthropic_unsupported_effort_surfaces_provider_400(cassette: Cassette) -> None:
    path = (
        "anthropic/pydanticai__test_anthropic_explicit_effort_xhigh_unsupported_model_errors.yaml"
    )
    replay = Replay(cassette(path))
    with pytest.raises(llm.BadRequestError) as err:
        await _claude(replay, "claude-opus-4-6").generate(_ask(effort="xhigh"))
    assert "does not support effort level 'xhigh'" in str(err.value)
    assert err.value.status == 400
    assert err.value.context["type"] == "invalid_request_error"
    assert err.value.context["request_id"].startswith("req_")
    assert len(replay.sent) == 1


async def test_anthropic_404_not_found_error(cassette: Cassette) -> None:
    replay = Replay(cassette("anthropic/pydanticai__test_anthropic_count_tokens_error.yaml"))
    with pytest.raises(llm.BadRequestError) as err:
        await _claude(replay, "claude-does-not-exist").generate(_ask())
    assert err.value.status == 404
    assert err.value.context["type"] == "not_found_error"


async def test_anthropic_prompt_cache_usage(cassette: Cassette) -> None:
    replay = Replay(cassette("anthropic/pydanticai__test_anthropic_cache_real_api.yaml"))
    provider = _claude(replay)
    first = await provider.generate(_ask(cache=True))
    assert first.usage.cache_read_tokens == 1111
    second = await provider.generate(_ask(cache=True))
    # input_tokens counts every prompt token: 3 fresh + 1111 read + 418 written.
    assert second.usage == llm.Usage(
        input_tokens=1532,
        output_tokens=33,
        total_tokens=1565,
        cache_read_tokens=1111,
        cache_write_tokens=418,
    )


async def test_anthropic_cache_control_placement() -> None:
    replay = Replay([])
    provider = _claude(replay)
    tools = [llm.ToolSpec(name="a"), llm.ToolSpec(name="b")]
    req = llm.Request(
        messages=[
            llm.system("rules"),
            llm.user("first", cache=True),
            llm.assistant("ok"),
            llm.user("second"),
        ],
        tools=tools,
        cache=True,
        cache_ttl="1h",
    )
    body = provider._body(req, stream=False)
    marker = {"type": "ephemeral", "ttl": "1h"}
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][1]["cache_control"] == marker
    assert body["system"] == [{"type": "text", "text": "rules", "cache_control": marker}]
    assert body["messages"][0]["content"][0]["cache_control"] == marker
    assert body["messages"][2]["content"][-1]["cache_control"] == marker
    markers = str(body).count("ephemeral")
    assert markers == 4


async def test_anthropic_at_most_four_breakpoints_latest_win() -> None:
    provider = _claude(Replay([]))
    msgs = [
        llm.user(f"u{i}", cache=True) if i % 2 == 0 else llm.assistant(f"a{i}") for i in range(11)
    ]
    body = provider._body(llm.Request(messages=msgs), stream=False)
    marked = [b["text"] for m in body["messages"] for b in m["content"] if "cache_control" in b]
    assert marked == ["u4", "u6", "u8", "u10"]
    assert body["messages"][-1]["content"][0]["cache_control"] == {"type": "ephemeral"}


async def test_anthropic_inline_cache_usage(cassette: Cassette) -> None:
    replay = Replay(
        cassette("anthropic/pydanticai__test_inline_system_prompt_cache_prefix_is_reused.yaml")
    )
    provider = _claude(replay, "claude-opus-4-8")
    first = await provider.generate(_ask())
    second = await provider.generate(_ask())
    assert (first.usage.cache_write_tokens, first.usage.input_tokens) == (1590, 1592)
    assert (second.usage.cache_read_tokens, second.usage.input_tokens) == (1590, 1592)


@pytest.mark.parametrize("seed", SEEDS)
async def test_anthropic_input_json_delta_tool_use(cassette: Cassette, seed: int) -> None:
    replay = Replay(cassette("anthropic/anthropic-sdk__tool_use_response.txt"), seed=seed)
    events, resp = await _stream(_claude(replay), _ask())
    assert resp.text() == "I'll check the current weather in Paris for you."
    [call] = resp.tool_calls
    assert (call.name, call.arguments) == ("get_weather", {"location": "Paris"})
    fragments = "".join(e.arguments for e in events if isinstance(e, llm.ToolCallDelta))
    assert fragments.replace(" ", "") == '{"location":"Paris"}'
    assert resp.stop_reason is llm.StopReason.TOOL_USE


@pytest.mark.parametrize("seed", SEEDS)
async def test_anthropic_max_tokens_inside_tool_input(cassette: Cassette, seed: int) -> None:
    replay = Replay(
        cassette("anthropic/anthropic-sdk__incomplete_partial_json_response.txt"), seed=seed
    )
    _, resp = await _stream(_claude(replay), _ask())
    assert resp.stop_reason is llm.StopReason.MAX_TOKENS
    [call] = resp.tool_calls
    assert call.name == "make_file"
    assert call.arguments == {}
    assert call.raw_arguments is not None
    assert call.raw_arguments.startswith('{"filename": "taxes.txt", "lines_of_text": [')


async def test_anthropic_refusal_stop_reason(cassette: Cassette) -> None:
    replay = Replay(cassette("anthropic/anthropic-sdk__refusal_response.txt"), seed=1)
    _, resp = await _stream(_claude(replay), _ask())
    assert resp.stop_reason is llm.StopReason.REFUSAL
    assert resp.raw_stop_reason == "refusal"
    assert resp.parts == ()


async def test_anthropic_unknown_block_type_skipped(cassette: Cassette) -> None:
    replay = Replay(cassette("anthropic/anthropic-sdk__fallback_response.txt"), seed=2)
    _, resp = await _stream(_claude(replay), _ask())
    assert resp.parts == (llm.TextPart(text="Hello there!"),)
    assert resp.model == "claude-opus-4-7"


async def test_anthropic_error_event_after_200(cassette: Cassette) -> None:
    [item] = cassette("anthropic/anthropic-sdk__tool_use_response.txt")
    head = item.body.split(b"event: content_block_stop")[0]
    item.body = head + (
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
        b'"message":"Overloaded"}}\n\n'
    )
    replay = Replay([item, item])
    events: list[Any] = []
    with pytest.raises(llm.StreamError, match="Overloaded") as err:
        async for event in _claude(replay).stream(_ask()):
            events.append(event)
    assert any(isinstance(e, llm.TextDelta) for e in events)
    assert err.value.context["type"] == "overloaded_error"
    assert len(replay.sent) == 1  # text had reached the caller: not retried


@pytest.mark.parametrize(
    "path",
    [
        "anthropic/llm-anthropic__test_image_with_no_prompt.yaml",
        "anthropic/llm-anthropic__test_opus_46_adaptive_thinking.yaml",
        "anthropic/llm-anthropic__test_sonnet_46_effort_without_thinking.yaml",
        "anthropic/pydanticai__test_request_stream_fallback_for_high_max_tokens.yaml",
    ],
)
async def test_anthropic_plain_streams(cassette: Cassette, path: str) -> None:
    turns = cassette(path)
    replay = Replay(turns, seed=len(path))
    _, resp = await _stream(_claude(replay), _ask())
    assert resp.text()
    assert resp.stop_reason is llm.StopReason.END_TURN
    assert resp.usage.output_tokens > 0
    assert resp.id and resp.id.startswith("msg_")
    # A 200 may carry retry-after and rate-limit headers: they change nothing.
    if "retry-after" in turns[0].headers:
        assert len(replay.sent) == 1


def test_adaptive_thinking_support_by_model() -> None:
    assert anthropic.supports_adaptive_thinking("claude-opus-4-6")
    assert anthropic.supports_adaptive_thinking("claude-sonnet-4-6-20260101")
    assert anthropic.supports_adaptive_thinking("claude-opus-5")
    assert not anthropic.supports_adaptive_thinking("claude-sonnet-4-5-20250929")
    assert not anthropic.supports_adaptive_thinking("claude-3-7-sonnet-20250219")
    assert not anthropic.supports_adaptive_thinking("claude-haiku-4-5")


async def test_anthropic_multi_turn_thinking_request_matches_recording(cassette: Cassette) -> None:
    turns = cassette("anthropic/pydanticai__test_anthropic_model_thinking_part.yaml")
    replay = Replay(turns)
    provider = _claude(replay, "claude-sonnet-4-5")
    first_q = llm.user("How do I cross the street?")
    resp = await provider.generate(
        llm.Request(messages=[first_q], thinking_budget=1024, max_tokens=4096)
    )
    follow = llm.user(
        "Considering the way to cross the street, analogously, how do I cross the river?"
    )
    resp2 = await provider.generate(
        llm.Request(
            messages=[first_q, resp.message(), follow], thinking_budget=1024, max_tokens=4096
        )
    )
    assert resp2.thinking[0].signature
    for index, item in enumerate(turns):
        expected = {k: v for k, v in item.request_body.items() if k != "stream"}
        assert replay.sent_json(index) == expected


@pytest.mark.parametrize(
    ("path", "model", "knobs"),
    [
        (
            "anthropic/llm-anthropic__test_sonnet_46_effort_without_thinking.yaml",
            "claude-sonnet-4-6",
            {"effort": "low", "temperature": 1.0},
        ),
        (
            "anthropic/llm-anthropic__test_opus_46_adaptive_thinking.yaml",
            "claude-opus-4-6",
            {"thinking": True},
        ),
    ],
)
async def test_anthropic_stream_request_matches_llm_anthropic_recording(
    cassette: Cassette, path: str, model: str, knobs: dict[str, Any]
) -> None:
    [item] = cassette(path)
    replay = Replay([item], seed=21)
    req = _ask("Two names for a pet pelican, be brief", max_tokens=8192, **knobs)
    _, resp = await _stream(_claude(replay, model), req)
    assert resp.text()
    sent = replay.sent_json(0)
    expected = dict(item.request_body)
    if knobs.get("thinking"):
        expected.pop("temperature")  # thinking runs at the default temperature: not sent
        assert [p.kind for p in resp.parts if p.kind == "thinking"] == ["thinking"]
    assert sent == expected
