"""``prepare()`` builds a provider's HTTP client ahead of its first request (a run calls it
while its workspace is made ready): one client, used by the requests, closed with the provider."""

from __future__ import annotations

import asyncio

from driveros.llm import Request, openaicompat, user
from driveros.testing import ScriptedModelServer, Turn


async def test_prepare_builds_the_one_client_the_requests_use() -> None:
    async with ScriptedModelServer([Turn(text="one"), Turn(text="two")]) as server:
        provider = openaicompat.openai("m", api_key="k", base_url=server.openai_base_url)
        await asyncio.gather(provider.prepare(), provider.prepare())
        client = provider._client
        assert client is not None and not client.is_closed
        first = await provider.generate(Request(messages=[user("hi")]))
        second = await provider.generate(Request(messages=[user("again")]))
        assert (first.text(), second.text()) == ("one", "two")
        assert provider._client is client
        await provider.aclose()
        assert client.is_closed
