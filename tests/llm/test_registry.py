"""Registry and building providers from the environment."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from driveros import llm
from driveros.config import PROVIDER_ORDER, load_environment
from driveros.llm import anthropic, openaicompat
from driveros.llm._registry import ollama_answers


def test_registry_add_get_names_and_duplicates() -> None:
    reg = llm.Registry()
    grok = openaicompat.xai("grok-4-fast", api_key="k")
    claude = anthropic.claude(api_key="k")
    reg.add("grok", grok)
    reg.add("claude", claude)
    assert reg.names() == ["grok", "claude"]
    assert reg.get("grok") is grok and reg.get("nope") is None
    assert reg.must_get("claude") is claude
    assert "grok" in reg and len(reg) == 2
    with pytest.raises(llm.ConfigError, match="already registered"):
        reg.add("grok", grok)
    with pytest.raises(llm.ConfigError, match=r"unknown provider 'gpt'.*grok, claude"):
        reg.must_get("gpt")


def test_provider_from_env_names_missing_key(tmp_path: Path) -> None:
    env = load_environment(cwd=tmp_path, environ={})
    with pytest.raises(llm.ConfigError, match=r"^OPENAI_API_KEY is not set$"):
        llm.provider_from_env("openai", env)
    with pytest.raises(llm.ConfigError, match="unknown provider"):
        llm.provider_from_env("gemini", env)


def test_provider_from_env_flags_win(tmp_path: Path) -> None:
    env = load_environment(
        cwd=tmp_path,
        environ={
            "OPENROUTER_API_KEY": "or-key",
            "OPENROUTER_MODEL": "env/model",
            "ANTHROPIC_API_KEY": "ant-key",
            "ANTHROPIC_BASE_URL": "https://proxy.example/v1",
        },
    )
    router = llm.provider_from_env("openrouter", env)
    assert (router.name, router.model) == ("openrouter", "env/model")
    flagged = llm.provider_from_env("openrouter", env, model="flag/model", base_url="http://x/v1")
    assert flagged.model == "flag/model"
    assert isinstance(flagged, openaicompat.OpenAICompatProvider)
    assert flagged.base_url == "http://x/v1"
    claude = llm.provider_from_env("anthropic", env)
    assert isinstance(claude, anthropic.AnthropicProvider)
    assert claude.base_url == "https://proxy.example"
    assert claude.model == anthropic.DEFAULT_MODEL
    ollama = llm.provider_from_env("ollama", env)
    assert ollama.name == "ollama"


async def test_registry_from_env_documented_order(tmp_path: Path) -> None:
    env = load_environment(
        cwd=tmp_path,
        environ={
            "X_AI_API_KEY": "x",
            "OPENAI_API_KEY": "o",
            "ANTHROPIC_API_KEY": "a",
            "OLLAMA_HOST": "127.0.0.1:9",
        },
    )
    reg = await llm.Registry.from_env(env, probe_ollama=False)
    assert reg.names() == ["anthropic", "openai", "xai", "ollama"]
    assert reg.names() == [n for n in PROVIDER_ORDER if n in reg]
    await reg.aclose()


async def test_registry_from_env_probes_local_ollama(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setattr("driveros.llm._registry.OLLAMA_PROBE", ("127.0.0.1", port))
    env = load_environment(cwd=tmp_path, environ={})
    try:
        assert await ollama_answers("127.0.0.1", port)
        reg = await llm.Registry.from_env(env)
        assert reg.names() == ["ollama"]
        assert reg.must_get("ollama").model == openaicompat.DEFAULT_MODELS["ollama"]
        await reg.aclose()
        assert (await llm.Registry.from_env(env, probe_ollama=False)).names() == []
    finally:
        server.close()
        await server.wait_closed()
    assert not await ollama_answers("127.0.0.1", port)
    assert (await llm.Registry.from_env(env)).names() == []
