"""driveros.llm.fim against the scripted model's real FIM routes (loopback HTTP)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from driveros import ConfigError
from driveros.config import load_environment
from driveros.llm import fim, openaicompat
from driveros.testing import ScriptedModelServer, Turn


def _req(**kw: object) -> fim.FimRequest:
    base: dict[str, object] = {"prefix": "def add(a, b):\n    ", "suffix": "\n\nprint(add(1, 2))\n"}
    base.update(kw)
    return fim.FimRequest.model_validate(base)


async def test_fim_completions_streams_text_and_sends_prompt_and_suffix() -> None:
    async with ScriptedModelServer([Turn(text="return a + b")], chunk=3) as srv:
        provider = fim.CompletionsFim("coder", base_url=srv.openai_base_url)
        try:
            pieces = [p async for p in provider.stream(_req(stop=("\n\n",), max_tokens=40))]
        finally:
            await provider.aclose()
    assert "".join(pieces) == "return a + b"
    assert len(pieces) > 1  # streamed, not one block
    (received,) = srv.received
    assert received.path == "/v1/completions"
    assert received.body["prompt"] == "def add(a, b):\n    "
    assert received.body["suffix"] == "\n\nprint(add(1, 2))\n"
    assert received.body["stop"] == ["\n\n"]
    assert received.body["max_tokens"] == 40
    assert received.body["stream"] is True


async def test_fim_mistral_route_and_header_with_snippets() -> None:
    async with ScriptedModelServer([Turn(text="a + b")]) as srv:
        provider = fim.CompletionsFim(
            "codestral-latest", base_url=srv.openai_base_url, api_key="k", mistral=True
        )
        try:
            text = await provider.complete(
                _req(
                    path="calc.py",
                    language="python",
                    snippets=(
                        fim.Snippet(path="util.py", text="def sub(a, b):\n    return a - b"),
                    ),
                )
            )
        finally:
            await provider.aclose()
    assert text == "a + b"
    (received,) = srv.received
    assert received.path == "/v1/fim/completions"
    assert received.headers["authorization"] == "Bearer k"
    assert received.body["prompt"] == (
        "# Path: util.py\n# def sub(a, b):\n#     return a - b\n# Path: calc.py\n"
        "def add(a, b):\n    "
    )


async def test_fim_chat_fallback_asks_for_infill_and_strips_fences() -> None:
    async with ScriptedModelServer([Turn(text="```python\nreturn a + b\n```")]) as srv:
        chat = openaicompat.openai("gpt-x", api_key="k", base_url=srv.openai_base_url)
        provider = fim.ChatFim(chat)
        try:
            text = await provider.complete(_req(path="calc.py"))
        finally:
            await provider.aclose()
    assert text == "return a + b"
    (received,) = srv.received
    assert received.path == "/v1/chat/completions"
    prompt = received.body["messages"][-1]["content"]
    assert "def add(a, b):\n    <|CURSOR|>\n\nprint(add(1, 2))" in prompt


async def test_fim_cancel_closes_the_stream_the_server_sees_the_disconnect() -> None:
    slow = Turn(text="x" * 400, interval_s=0.05)
    async with ScriptedModelServer([slow], chunk=4) as srv:
        provider = fim.CompletionsFim("coder", base_url=srv.openai_base_url)
        got: list[str] = []

        async def consume() -> None:
            async for piece in provider.stream(_req()):
                got.append(piece)

        task = asyncio.create_task(consume())
        async with asyncio.timeout(10):
            while len(got) < 2:
                await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        async with asyncio.timeout(10):
            while not srv.cut:
                await asyncio.sleep(0.02)
        await provider.aclose()
    assert srv.cut == [0]
    assert len("".join(got)) < 400


async def test_fim_http_error_is_a_typed_provider_error() -> None:
    from driveros.llm import AuthError
    from driveros.testing import ScriptedError

    async with ScriptedModelServer([Turn(error=ScriptedError(status=401))]) as srv:
        provider = fim.CompletionsFim("coder", base_url=srv.openai_base_url)
        try:
            with pytest.raises(AuthError):
                await provider.complete(_req())
        finally:
            await provider.aclose()


@pytest.mark.parametrize(
    ("name", "url", "want"),
    [
        ("ollama", None, "completions"),
        ("openai", "http://127.0.0.1:8080/v1", "completions"),
        ("openai", None, "chat"),
        ("openai", "https://codestral.mistral.ai/v1", "mistral"),
        ("anthropic", None, "chat"),
        ("openrouter", None, "chat"),
    ],
)
def test_fim_choose_api_by_endpoint(name: str, url: str | None, want: str) -> None:
    assert fim.choose_api(name, url) == want


def test_fim_from_env_untrusted_workspace_never_chooses_the_endpoint(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_text("OLLAMA_HOST=http://evil.example:11434\nOPENAI_BASE_URL=http://evil\n")
    env = load_environment(
        cwd=ws, environ={"HOME": str(tmp_path)}, trusted=False, user_file=tmp_path / "none"
    )
    provider = fim.fim_from_env("ollama", env)
    assert isinstance(provider, fim.CompletionsFim)
    assert provider.url == "http://localhost:11434/v1/completions"
    assert provider.model == fim.DEFAULT_FIM_MODELS["ollama"]
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        fim.fim_from_env("openai", env)


def test_fim_from_env_key_from_another_source_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_text("OPENAI_BASE_URL=http://evil.example/v1\n")
    env = load_environment(
        cwd=ws,
        environ={"HOME": str(tmp_path), "OPENAI_API_KEY": "sk-real"},
        trusted=True,
        user_file=tmp_path / "none",
    )
    with pytest.raises(ConfigError):
        fim.fim_from_env("openai", env, api="completions")
