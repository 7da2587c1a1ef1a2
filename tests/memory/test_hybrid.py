"""Hybrid recall with a loopback embedding model: fusion, the pinned model, reembed."""

from __future__ import annotations

from pathlib import Path

import pytest

from driveros import ConfigError, MemoryStoreError
from driveros.config import load_environment
from driveros.memory import MemoryStore, Provenance, embedder_from_env
from tests.memory._embedserver import EmbeddingServer
from tests.memory.conftest import embedder

PROV = Provenance(run_id="r", model="m", task="t")


async def test_hybrid_search_finds_facts_lexical_recall_misses(
    tmp_path: Path, embed_server: EmbeddingServer
) -> None:
    path = tmp_path / "mem.db"
    async with await MemoryStore.open(path, scope="s", embedder=embedder(embed_server)) as s:
        await s.apply(
            adds=["the service keeps its rows in SQLite", "tests run with pytest"],
            provenance=PROV,
        )
        hits = await s.search("which database", 1)
        assert [h.text for h in hits] == ["the service keeps its rows in SQLite"]
        assert (await s.stats()).embed_model == "ollama:embed-a"
    # Lexical alone finds nothing for the same question: the hit came from the vectors.
    async with await MemoryStore.open(path, scope="s") as lexical:
        assert await lexical.search("which database", 1) == []


async def test_search_with_another_embedding_model_is_refused(
    tmp_path: Path, embed_server: EmbeddingServer
) -> None:
    path = tmp_path / "mem.db"
    async with await MemoryStore.open(path, scope="s", embedder=embedder(embed_server)) as s:
        await s.apply(adds=["uses SQLite"], provenance=PROV)
    other = embedder(embed_server, "embed-b")
    async with await MemoryStore.open(path, scope="s", embedder=other) as s:
        with pytest.raises(MemoryStoreError) as info:
            await s.search("database", 3)
        message = str(info.value)
        assert "'ollama:embed-a'" in message and "'ollama:embed-b'" in message
        assert "driveros memory reembed" in message
        with pytest.raises(MemoryStoreError, match="pinned"):
            await s.apply(adds=["another fact"], provenance=PROV)
        assert [f.text for f in await s.list_facts()] == ["uses SQLite"]

        assert await s.reembed(embedder(embed_server, "embed-b")) == 1
        assert (await s.stats()).embed_model == "ollama:embed-b"
        assert [f.text for f in await s.search("database", 3)] == ["uses SQLite"]


async def test_embedding_errors_become_memory_errors(tmp_path: Path) -> None:
    with EmbeddingServer(fail_status=500) as server:
        async with await MemoryStore.open(
            tmp_path / "m.db", scope="s", embedder=embedder(server)
        ) as s:
            with pytest.raises(MemoryStoreError, match="HTTP 500"):
                await s.apply(adds=["x"], provenance=PROV)
            assert await s.list_facts() == []


async def test_embedder_from_env_resolves_provider_prefix_and_defaults(tmp_path: Path) -> None:
    env = load_environment(cwd=tmp_path, environ={"MNEME_EMBED_MODEL": "ollama:nomic-embed-text"})
    e = embedder_from_env(env)
    assert e is not None and e.model == "ollama:nomic-embed-text"
    await e.aclose()
    env = load_environment(
        cwd=tmp_path,
        environ={"MNEME_EMBED_MODEL": "text-embedding-3-small", "OPENAI_API_KEY": "sk-test-123"},
    )
    e = embedder_from_env(env)
    assert e is not None and e.model == "openai:text-embedding-3-small"
    await e.aclose()
    assert embedder_from_env(load_environment(cwd=tmp_path, environ={})) is None
    with pytest.raises(ConfigError, match="OPENROUTER_API_KEY"):
        embedder_from_env(
            load_environment(cwd=tmp_path, environ={"MNEME_EMBED_MODEL": "openrouter:x/y"})
        )
