"""What each adapter sends: thinking replay per family, roles, tools, knobs."""

from __future__ import annotations

from typing import Any

from driveros import llm
from driveros.llm import anthropic, openaicompat

ANTHROPIC_THINKING = llm.ThinkingPart(text="hmm", signature="sig-1", provider="anthropic")
REDACTED = llm.ThinkingPart(redacted="opaque", provider="anthropic")
ROUTER_THINKING = llm.ThinkingPart(
    text="router thoughts",
    provider="openrouter",
    details=({"type": "reasoning.text", "text": "router thoughts", "index": 0},),
)
CALL = llm.ToolCallPart(id="t1", name="run", arguments={"command": "ls"})


def _history(*thinking: llm.ThinkingPart) -> llm.Request:
    turn = llm.Message(role="assistant", parts=(*thinking, llm.TextPart(text="ok"), CALL))
    return llm.Request(
        messages=[
            llm.system("be brief"),
            llm.user("list"),
            turn,
            llm.tool_results(llm.ToolResultPart(tool_call_id="t1", content="a.py", is_error=True)),
        ]
    )


def _body(provider: Any, req: llm.Request) -> dict[str, Any]:
    body: dict[str, Any] = provider._body(req, stream=False)
    return body


def test_anthropic_replays_only_its_own_thinking_in_order() -> None:
    claude = anthropic.claude(api_key="k")
    body = _body(claude, _history(ANTHROPIC_THINKING, ROUTER_THINKING, REDACTED))
    assert body["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "hmm", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "ok"},
        {"type": "tool_use", "id": "t1", "name": "run", "input": {"command": "ls"}},
    ]
    assert body["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "a.py", "is_error": True}
        ],
    }
    assert body["system"] == [{"type": "text", "text": "be brief"}]


def test_openai_compat_never_sends_other_families_thinking() -> None:
    gpt = openaicompat.openai(api_key="k")
    body = _body(gpt, _history(ANTHROPIC_THINKING, ROUTER_THINKING))
    assistant = body["messages"][2]
    assert assistant == {
        "role": "assistant",
        "content": "ok",
        "tool_calls": [
            {
                "id": "t1",
                "type": "function",
                "function": {"name": "run", "arguments": '{"command":"ls"}'},
            }
        ],
    }
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "t1", "content": "a.py"}
    assert body["messages"][0] == {"role": "system", "content": "be brief"}


def test_openrouter_replays_reasoning_details() -> None:
    router = openaicompat.openrouter(api_key="k")
    assistant = _body(router, _history(ANTHROPIC_THINKING, ROUTER_THINKING))["messages"][2]
    assert assistant["reasoning"] == "router thoughts"
    assert assistant["reasoning_details"] == [dict(ROUTER_THINKING.details[0])]  # type: ignore[index]


def test_unparseable_arguments_are_replayed_verbatim() -> None:
    bad = llm.ToolCallPart(id="t9", name="run", raw_arguments='{"command": ')
    req = llm.Request(messages=[llm.user("x"), llm.Message(role="assistant", parts=(bad,))])
    sent = _body(openaicompat.xai(api_key="k"), req)["messages"][1]
    assert sent["content"] is None
    assert sent["tool_calls"][0]["function"]["arguments"] == '{"command": '


def test_request_knobs_openai_and_anthropic() -> None:
    req = llm.Request(
        messages=[llm.user("x")],
        tools=[llm.ToolSpec(name="run")],
        tool_choice="run",
        stop=["END"],
        temperature=0.3,
        model="override-model",
        max_tokens=50,
    )
    grok = _body(openaicompat.xai("grok-4", api_key="k"), req)
    assert grok["model"] == "override-model"
    assert grok["tool_choice"] == {"type": "function", "function": {"name": "run"}}
    assert grok["stop"] == ["END"] and grok["temperature"] == 0.3 and grok["max_tokens"] == 50
    claude = _body(anthropic.claude(api_key="k"), req)
    assert claude["model"] == "override-model"
    assert claude["tool_choice"] == {"type": "tool", "name": "run"}
    assert claude["stop_sequences"] == ["END"] and claude["temperature"] == 0.3
    assert claude["tools"] == [
        {"name": "run", "input_schema": {"type": "object", "properties": {}}}
    ]
    gpt = _body(openaicompat.openai("gpt-4.1", api_key="k"), req)
    assert gpt["max_completion_tokens"] == 50 and "max_tokens" not in gpt


def test_openrouter_marks_the_conversation_end_and_sends_at_most_four_breakpoints() -> None:
    router = openaicompat.openrouter(api_key="k")
    call = llm.ToolCallPart(id="c1", name="read_file", arguments={"path": "a"})
    messages = [
        llm.system("rules", cache=True),
        *[llm.user(f"note {i}", cache=True) for i in range(5)],
        llm.Message(role="assistant", parts=(call,)),
        llm.tool_results(llm.ToolResultPart(tool_call_id="c1", name="read_file", content="x")),
    ]
    body = _body(router, llm.Request(messages=messages, cache=True))
    marked = [
        m
        for m in body["messages"]
        if isinstance(m["content"], list) and any("cache_control" in b for b in m["content"])
    ]
    assert len(marked) == 4
    # The latest markers win: the end of the conversation (the tool result) is one of them.
    assert body["messages"][-1]["role"] == "tool"
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in str(body["messages"][0])
