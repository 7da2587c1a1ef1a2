"""The Chat Completions adapter against recorded real traffic, re-chunked at random."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from driveros import llm
from driveros.llm import openaicompat
from tests.llm.conftest import Interaction, Replay

Cassette = Callable[[str], list[Interaction]]
SEEDS = (0, 1, 2)
NO_RETRY = llm.RetryPolicy(max_retries=0)


async def _stream(provider: llm.Provider, req: llm.Request) -> tuple[list[Any], llm.Response]:
    events = [e async for e in provider.stream(req)]
    assert isinstance(events[-1], llm.StreamDone)
    assert not any(isinstance(e, llm.StreamDone) for e in events[:-1])
    return events[:-1], events[-1].response


def _ask(text: str = "hi", **kw: Any) -> llm.Request:
    return llm.Request(messages=[llm.user(text)], **kw)


@pytest.mark.parametrize("seed", SEEDS)
async def test_openai_stream_tool_call_fragments(cassette: Cassette, seed: int) -> None:
    turns = cassette("openai/pydanticai__test_run_stream_sync_streams_real_model.yaml")
    replay = Replay(turns, seed=seed)
    provider = openaicompat.openai("gpt-4o-mini", api_key="sk-test", http_client=replay.client())
    events, resp = await _stream(provider, _ask("capital of the UK?"))
    assert resp.stop_reason is llm.StopReason.TOOL_USE
    [call] = resp.tool_calls
    assert (call.id, call.name, call.arguments) == (
        "call_ZR5UUuTt3pf61kjwAJIYdVMj",
        "get_capital",
        {"country": "UK"},
    )
    fragments = "".join(e.arguments for e in events if isinstance(e, llm.ToolCallDelta))
    assert json.loads(fragments) == {"country": "UK"}
    assert (resp.usage.input_tokens, resp.usage.output_tokens, resp.usage.total_tokens) == (
        53,
        15,
        68,
    )
    sent = replay.sent[0]
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.url.path == "/v1/chat/completions"
    body = replay.sent_json(0)
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}

    # Turn 2: the tool result goes back as a role=tool message with the same id.
    history = [llm.user("capital of the UK?"), resp.message()]
    history.append(
        llm.tool_results(llm.ToolResultPart(tool_call_id=call.id, name=call.name, content="London"))
    )
    _, resp2 = await _stream(provider, llm.Request(messages=history))
    assert resp2.text() == "The capital of the UK is London."
    assert resp2.stop_reason is llm.StopReason.END_TURN
    sent2 = replay.sent_json(1)["messages"]
    assert sent2[1]["tool_calls"][0]["id"] == call.id
    assert json.loads(sent2[1]["tool_calls"][0]["function"]["arguments"]) == {"country": "UK"}
    assert sent2[2] == {"role": "tool", "tool_call_id": call.id, "content": "London"}


@pytest.mark.parametrize("seed", SEEDS)
async def test_openai_stream_parallel_tool_calls(cassette: Cassette, seed: int) -> None:
    replay = Replay(cassette("openai/pydanticai__test_complex_agent_run.yaml"), seed=seed)
    provider = openaicompat.openai("gpt-4o", api_key="k", http_client=replay.client())
    _, resp = await _stream(provider, _ask(tool_choice="required"))
    assert [(c.id, c.name, c.arguments) for c in resp.tool_calls] == [
        ("call_q2UyBRP7eXNTzAoR8lEhjc9Z", "get_country", {}),
        ("call_b51ijcpFkDiTQG1bQzsrmtW5", "get_product_name", {}),
    ]
    assert resp.usage.total_tokens == 404


@pytest.mark.parametrize("variant", "abcd")
@pytest.mark.parametrize("seed", SEEDS)
async def test_openai_stream_tool_call_quirks(cassette: Cassette, variant: str, seed: int) -> None:
    path = f"openai-compat-quirks/simonw-llm__test_tools_streaming_variant_{variant}.yaml"
    replay = Replay(cassette(path), seed=seed)
    provider = openaicompat.openai("gpt-4.1-mini", api_key="k", http_client=replay.client())
    _, resp = await _stream(provider, _ask("What is the current llm version?"))
    [call] = resp.tool_calls
    assert call.name == "llm_version"
    assert call.arguments == {}
    assert call.raw_arguments is None
    assert call.id in ("0", "llm_version:0")
    assert resp.stop_reason is llm.StopReason.TOOL_USE
    assert resp.usage.cost_usd is not None and resp.usage.cost_usd > 0
    _, resp2 = await _stream(provider, _ask())
    assert "0.fixed-version" in resp2.text()


async def test_openai_empty_tool_call_id_is_synthesised_consistently(cassette: Cassette) -> None:
    path = "openai-compat-quirks/pydanticai__test_compatible_api_with_tool_calls_without_id.yaml"
    replay = Replay(cassette(path))
    provider = openaicompat.OpenAICompatProvider(
        "gemini-2.5-pro",
        base_url="https://example.test/v1beta/openai",
        api_key="k",
        http_client=replay.client(),
    )
    resp = await provider.generate(_ask("What is the current time?"))
    [call] = resp.tool_calls
    assert call.id.startswith("call_0_")
    history = [
        llm.user("What is the current time?"),
        resp.message(),
        llm.tool_results(llm.ToolResultPart(tool_call_id=call.id, content="Noon")),
    ]
    resp2 = await provider.generate(llm.Request(messages=history))
    assert resp2.text() == "The current time is Noon."
    sent = replay.sent_json(1)["messages"]
    assert sent[1]["tool_calls"][0]["id"] == sent[2]["tool_call_id"] == call.id
    # Gemini's vendor fields on the message are passed back to the same server.
    assert sent[1]["thought_signature"].startswith("AVSoXO4A")
    assert "google" in sent[1]["extra_content"]


async def test_openai_stream_error_event_in_200_stream(cassette: Cassette) -> None:
    path = "openai-compat-quirks/pydanticai__test_tool_use_failed_error_streaming.yaml"
    replay = Replay(cassette(path), seed=5)
    provider = openaicompat.OpenAICompatProvider(
        "openai/gpt-oss-120b",
        base_url="https://api.groq.com/openai/v1",
        api_key="k",
        http_client=replay.client(),
    )
    with pytest.raises(llm.StreamError) as err:
        await _stream(provider, _ask())
    assert "Tool call validation failed" in str(err.value)
    assert err.value.status == 400
    assert err.value.context["code"] == "tool_use_failed"
    assert len(replay.sent) == 1  # output had reached the caller: never retried
    # The next turn works and Groq's x_groq usage is read.
    _, resp = await _stream(provider, _ask())
    assert resp.tool_calls[0].arguments == {"name": "example"}
    assert resp.usage.reasoning_tokens == 23
    assert resp.thinking[0].text.startswith("We need to call the function")


async def test_openrouter_error_object_mid_stream(cassette: Cassette) -> None:
    replay = Replay(cassette("openrouter/pydanticai__test_openrouter_stream_error.yaml"), seed=3)
    provider = openaicompat.openrouter(
        "minimax/minimax-m2:free", api_key="k", http_client=replay.client()
    )
    events: list[Any] = []
    with pytest.raises(llm.StreamError, match="Token limit reached"):
        async for event in provider.stream(_ask("Hello there", max_tokens=10)):
            events.append(event)
    assert any(isinstance(e, llm.ThinkingDelta) and e.text == "We need" for e in events)
    body = replay.sent_json(0)
    assert body["max_tokens"] == 10


@pytest.mark.parametrize(
    ("path", "message", "code"),
    [
        (
            "openai/pydanticai__test_openai_o1_mini_system_role[developer].yaml",
            "does not support 'developer'",
            "unsupported_value",
        ),
        (
            "openai/pydanticai__test_openai_web_search_tool_model_not_supported.yaml",
            "Web search options not supported",
            None,
        ),
    ],
)
async def test_openai_http_400_is_bad_request_with_provider_message(
    cassette: Cassette, path: str, message: str, code: str | None
) -> None:
    replay = Replay(cassette(path))
    provider = openaicompat.openai("o1-mini", api_key="k", http_client=replay.client())
    with pytest.raises(llm.BadRequestError) as err:
        await provider.generate(_ask())
    assert message in str(err.value)
    assert err.value.status == 400
    assert err.value.context["code"] == code
    assert not err.value.retryable
    assert len(replay.sent) == 1


async def test_openrouter_429_is_retried_then_raised(cassette: Cassette) -> None:
    replay = Replay(cassette("openrouter/pydanticai__test_openrouter_errors_raised.yaml"))
    provider = openaicompat.openrouter(
        "google/gemini-2.0-flash-exp:free",
        api_key="k",
        http_client=replay.client(),
        retry=llm.RetryPolicy(max_retries=2, base_delay=0.0),
    )
    with pytest.raises(llm.RateLimitError) as err:
        await provider.generate(llm.Request(messages=[llm.system("Be helpful."), llm.user("joke")]))
    assert len(replay.sent) == 3
    assert not err.value.spend_cap
    assert "rate-limited upstream" in err.value.context["upstream"]


async def test_openai_reasoning_model_uses_max_completion_tokens(cassette: Cassette) -> None:
    replay = Replay(cassette("openai/pydanticai__test_max_completion_tokens[o3-mini].yaml"))
    provider = openaicompat.openai("o3-mini", api_key="k", http_client=replay.client())
    resp = await provider.generate(_ask("hello", max_tokens=100, temperature=0.2, effort="low"))
    assert resp.text() == "Hello there! How can I help you today?"
    assert resp.usage.reasoning_tokens == 64
    body = replay.sent_json(0)
    assert body["max_completion_tokens"] == 100
    assert "max_tokens" not in body and "temperature" not in body
    assert body["reasoning_effort"] == "low"


def test_reasoning_model_names() -> None:
    for name in ("o1", "o3-mini", "o4-mini", "gpt-5", "gpt-5.1-codex", "openai/o3"):
        assert openaicompat.is_reasoning_model(name), name
    for name in ("gpt-4o", "gpt-4.1-mini", "gpt-5-chat-latest", "grok-4", "llama3.2"):
        assert not openaicompat.is_reasoning_model(name), name


@pytest.mark.parametrize("seed", SEEDS)
async def test_deepseek_reasoning_content_stream(cassette: Cassette, seed: int) -> None:
    path = "openai-compat-quirks/pydanticai__test_deepseek_model_thinking_stream.yaml"
    replay = Replay(cassette(path), seed=seed)
    provider = openaicompat.OpenAICompatProvider(
        "deepseek-reasoner",
        name="deepseek",
        base_url="https://api.deepseek.com",
        api_key="k",
        http_client=replay.client(),
    )
    events, resp = await _stream(provider, _ask("Hello"))
    [thinking] = resp.thinking
    assert thinking.text.startswith('Hmm, the user just said "Hello"')
    assert thinking.provider == "deepseek"
    streamed = "".join(e.text for e in events if isinstance(e, llm.ThinkingDelta))
    assert streamed == thinking.text
    assert resp.text() and resp.parts[-1] == llm.TextPart(text=resp.text())
    # Replayed to the same family under the field it came from.
    replay.interactions.append(replay.interactions[0])
    history = [llm.user("Hello"), resp.message(), llm.user("again")]
    await _stream(provider, llm.Request(messages=history))
    assert replay.sent_json(1)["messages"][1]["reasoning_content"] == thinking.text


@pytest.mark.parametrize("seed", SEEDS)
async def test_openrouter_signed_reasoning_details_stream_and_replay(
    cassette: Cassette, seed: int
) -> None:
    path = "openrouter/pydanticai__test_openrouter_streaming_reasoning.yaml"
    replay = Replay(cassette(path), seed=seed)
    provider = openaicompat.openrouter(
        "anthropic/claude-sonnet-4.5", api_key="k", http_client=replay.client()
    )
    _, resp = await _stream(provider, _ask("2+2?", thinking=True))
    assert replay.sent_json(0)["reasoning"] == {"enabled": True}
    [thinking] = resp.thinking
    assert thinking.text == "This is a simple arithmetic question. 2+2 equals 4."
    assert thinking.signature and thinking.signature.startswith("Et0BCkgIChACGAIqQA2s")
    assert thinking.details is not None
    [detail] = thinking.details
    assert detail["type"] == "reasoning.text" and detail["format"] == "anthropic-claude-v1"
    assert detail["text"] == thinking.text and detail["signature"] == thinking.signature
    replay.interactions.append(replay.interactions[0])
    await _stream(
        provider, llm.Request(messages=[llm.user("2+2?"), resp.message(), llm.user("ok")])
    )
    sent = replay.sent_json(1)["messages"][1]
    assert sent["reasoning_details"] == [detail]
    assert sent["reasoning"] == thinking.text


async def test_openrouter_encrypted_reasoning_details(cassette: Cassette) -> None:
    path = "openrouter/pydanticai__test_openrouter_stream_with_reasoning.yaml"
    replay = Replay(cassette(path), seed=9)
    provider = openaicompat.openrouter("openai/o3", api_key="k", http_client=replay.client())
    _, resp = await _stream(provider, _ask())
    [thinking] = resp.thinking
    assert thinking.text == ""
    assert thinking.details and thinking.details[0]["type"] == "reasoning.encrypted"
    assert thinking.details[0]["data"].startswith("gAAAAABpCCSI")
    assert resp.text()


async def test_openrouter_usage_cost_and_cache(cassette: Cassette) -> None:
    replay = Replay(cassette("openrouter/pydanticai__test_openrouter_with_native_options.yaml"))
    provider = openaicompat.openrouter("x-ai/grok-4", api_key="k", http_client=replay.client())
    resp = await provider.generate(
        _ask(extra={"models": ["x-ai/grok-4"], "provider": {"only": ["xai"]}})
    )
    assert resp.model == "x-ai/grok-4"
    assert resp.usage.cache_read_tokens == 682
    assert resp.usage.reasoning_tokens == 165
    body = replay.sent_json(0)
    assert body["provider"] == {"only": ["xai"]}
    assert body["usage"] == {"include": True}
    assert replay.sent[0].headers["x-title"] == "driveros"


async def test_openrouter_usage_accounting_cost(cassette: Cassette) -> None:
    replay = Replay(cassette("openrouter/pydanticai__test_openrouter_usage.yaml"))
    provider = openaicompat.openrouter(
        "openai/gpt-5-mini", api_key="k", http_client=replay.client()
    )
    first = await provider.generate(_ask("Tell me about Venus"))
    assert first.usage.cost_usd is None
    resp = await provider.generate(_ask("Tell me about Mars"))
    assert resp.usage == llm.Usage(
        input_tokens=17,
        output_tokens=2177,
        total_tokens=2194,
        reasoning_tokens=960,
        cost_usd=0.00435825,
    )
    assert replay.sent_json(1)["usage"] == {"include": True}


async def test_openrouter_effort_and_cache_control_request(cassette: Cassette) -> None:
    path = "openrouter/pydanticai__test_openrouter_thinking_high_emits_effort_high.yaml"
    replay = Replay(cassette(path))
    provider = openaicompat.openrouter(
        "anthropic/claude-sonnet-4.5", api_key="k", http_client=replay.client()
    )
    req = llm.Request(
        messages=[
            llm.system("You are terse.", cache=True),
            llm.user("Reply with the single word: ok"),
        ],
        effort="high",
        cache=True,
        cache_ttl="5m",
    )
    resp = await provider.generate(req)
    assert resp.text() == "ok"
    assert resp.thinking[0].signature
    body = replay.sent_json(0)
    assert body["reasoning"] == {"enabled": True, "effort": "high"}
    marker = {"type": "ephemeral", "ttl": "5m"}
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "You are terse.", "cache_control": marker}
    ]
    assert body["messages"][1]["content"][-1]["cache_control"] == marker


async def test_openai_prompt_cache_read_tokens(cassette: Cassette) -> None:
    replay = Replay(cassette("openai/pydanticai__test_openai_chat_prompt_cache_e2e.yaml"))
    provider = openaicompat.openai("gpt-5", api_key="k", http_client=replay.client())
    await provider.generate(_ask())
    resp = await provider.generate(_ask())
    assert resp.usage.cache_read_tokens == 4012
    assert resp.usage.input_tokens == 4020
    # OpenAI caches automatically: no cache_control markers are sent.
    assert "cache_control" not in replay.sent[1].content.decode()


@pytest.mark.parametrize(
    "path",
    [
        "ollama/pydanticai__test_ollama_local_native_output_uses_json_schema.yaml",
        "ollama/pydanticai__test_ollama_cloud_prompted_output.yaml",
    ],
)
async def test_ollama_reasoning_field(cassette: Cassette, path: str) -> None:
    replay = Replay(cassette(path))
    provider = openaicompat.ollama("qwen3", http_client=replay.client())
    resp = await provider.generate(_ask())
    assert resp.thinking and resp.thinking[0].text
    assert resp.thinking[0].provider == "ollama"
    assert resp.text()
    assert "authorization" not in replay.sent[0].headers


def test_ollama_host_forms() -> None:
    assert openaicompat.ollama().base_url == "http://localhost:11434/v1"
    assert openaicompat.ollama(base_url="gpu-box").base_url == "http://gpu-box:11434/v1"
    assert openaicompat.ollama(base_url="10.0.0.2:9999").base_url == "http://10.0.0.2:9999/v1"
    assert openaicompat.ollama(base_url="https://ollama.example/").base_url == (
        "https://ollama.example/v1"
    )


def test_presets_require_a_key() -> None:
    with pytest.raises(llm.ConfigError, match="X_AI_API_KEY"):
        openaicompat.xai()


async def test_openrouter_cache_stream_request_matches_recording(cassette: Cassette) -> None:
    [item] = cassette("openrouter/pydanticai__test_openrouter_cache_streaming_e2e.yaml")
    replay = Replay([item], seed=11)
    provider = openaicompat.openrouter(
        "anthropic/claude-sonnet-4.6", api_key="k", http_client=replay.client()
    )
    recorded = item.request_body["messages"]
    req = llm.Request(
        messages=[
            llm.system(recorded[0]["content"][0]["text"]),
            llm.user("Say hello in one word."),
        ],
        cache=True,
        cache_ttl="5m",
    )
    _, resp = await _stream(provider, req)
    assert resp.text() == "Hello!"
    assert replay.sent_json(0)["messages"] == recorded
    assert resp.usage.cost_usd == pytest.approx(0.000837)


async def test_openrouter_cache_write_then_read(cassette: Cassette) -> None:
    turns = cassette(
        "openrouter/pydanticai__test_openrouter_cache_messages_anthropic_real_api.yaml"
    )
    replay = Replay(turns)
    provider = openaicompat.openrouter(
        "anthropic/claude-sonnet-4.6", api_key="k", http_client=replay.client()
    )
    routing = {"provider": {"allow_fallbacks": False, "order": ["anthropic"]}}
    question = turns[0].request_body["messages"][1]["content"][0]["text"]
    first = await provider.generate(
        llm.Request(
            messages=[llm.system("You are a helpful assistant."), llm.user(question, cache=True)],
            cache_ttl="5m",
            extra=routing,
        )
    )
    assert first.stop_reason is llm.StopReason.MAX_TOKENS
    assert replay.sent_json(0)["messages"] == turns[0].request_body["messages"]
    history = [
        llm.system("You are a helpful assistant."),
        llm.user(question),
        first.message(),
        llm.user("Can you summarize that in one sentence?", cache=True),
    ]
    second = await provider.generate(llm.Request(messages=history, cache_ttl="5m", extra=routing))
    assert replay.sent_json(1)["messages"] == turns[1].request_body["messages"]
    assert (second.usage.cache_read_tokens, second.usage.cache_write_tokens) == (3211, 115)
    assert second.usage.input_tokens == 3329


async def test_openai_reasoning_effort_request_matches_recording(cassette: Cassette) -> None:
    item = cassette("openai/pydanticai__test_openai_model_thinking_part.yaml")[1]
    replay = Replay([item])
    provider = openaicompat.openai("o3-mini", api_key="k", http_client=replay.client())
    recorded = item.request_body["messages"]
    history = [
        llm.user(recorded[0]["content"]),
        llm.assistant(recorded[1]["content"]),
        llm.user(recorded[2]["content"]),
    ]
    resp = await provider.generate(llm.Request(messages=history, effort="high"))
    assert resp.usage.reasoning_tokens == 1792
    sent = replay.sent_json(0)
    assert sent == {k: v for k, v in item.request_body.items() if k != "stream"}


async def test_openrouter_non_stream_tool_call(cassette: Cassette) -> None:
    replay = Replay(cassette("openrouter/pydanticai__test_openrouter_tool_calling.yaml"))
    provider = openaicompat.openrouter(
        "mistralai/mistral-small", api_key="k", http_client=replay.client()
    )
    resp = await provider.generate(_ask("divide"))
    [call] = resp.tool_calls
    assert call.name == "divide"
    assert call.arguments == {"numerator": 123, "denominator": 456, "on_inf": "infinity"}


async def test_openrouter_stream_routing_options_and_cached_tokens(cassette: Cassette) -> None:
    [item] = cassette("openrouter/pydanticai__test_openrouter_stream_with_native_options.yaml")
    replay = Replay([item], seed=8)
    provider = openaicompat.openrouter(
        "google/gemini-2.0-flash-exp:free", api_key="k", http_client=replay.client()
    )
    extra = {k: item.request_body[k] for k in ("models", "provider", "transforms")}
    events, resp = await _stream(provider, _ask("Who are you", extra=extra))
    assert resp.model != "google/gemini-2.0-flash-exp:free"  # the fallback model answered
    assert resp.text()
    assert any(isinstance(e, llm.UsageDelta) for e in events)
    sent = replay.sent_json(0)
    for key, value in extra.items():
        assert sent[key] == value


async def test_openrouter_non_stream_reasoning_with_signature(cassette: Cassette) -> None:
    replay = Replay(cassette("openrouter/pydanticai__test_openrouter_map_messages_reasoning.yaml"))
    provider = openaicompat.openrouter(
        "anthropic/claude-3.7-sonnet:thinking", api_key="k", http_client=replay.client()
    )
    resp = await provider.generate(_ask("Who are you. Think about it."))
    [thinking] = resp.thinking
    assert thinking.text.startswith("This question is asking me about my identity.")
    assert thinking.details and thinking.details[0]["type"] == "reasoning.text"
    assert resp.text().startswith("I am Claude")
