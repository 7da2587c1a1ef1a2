"""AgentMemory against the scripted model server (real OpenAI wire format on loopback)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from driveros import MemoryStoreError
from driveros.agent._hooks import MemoryHook
from driveros.llm import Message, ToolCallPart, ToolResultPart, assistant, openaicompat, user
from driveros.memory import AgentMemory, MemoryStore, Provenance
from driveros.testing import ScriptedError, ScriptedModelServer, Turn

TASK = "What module path does this project declare?"


def transcript(output: str = "module example.com/demo\n\ngo 1.22\n") -> list[Message]:
    call = ToolCallPart(id="c1", name="read_file", arguments={"path": "go.mod"})
    return [
        user(TASK),
        Message(role="assistant", parts=(call,)),
        Message(
            role="tool",
            parts=(ToolResultPart(tool_call_id="c1", name="read_file", content=output),),
        ),
        assistant("The module path is example.com/demo."),
    ]


def facts(*texts: str) -> Turn:
    return Turn(text="```json\n" + json.dumps({"facts": list(texts)}) + "\n```")


def decisions(*items: dict[str, Any]) -> Turn:
    return Turn(text=json.dumps({"decisions": list(items)}))


async def run_store(
    tmp_path: Path,
    turns: Sequence[Turn],
    *,
    timeout: float = 30.0,
    redact: Sequence[str] = (),
    seed: Sequence[str] = (),
    verified: bool = True,
    msgs: Sequence[Message] | None = None,
) -> tuple[int, AgentMemory, ScriptedModelServer, MemoryStore]:
    store = await MemoryStore.open(tmp_path / "mem.db", scope="s")
    if seed:
        await store.apply(adds=list(seed), provenance=Provenance(run_id="run-0"))
    server = ScriptedModelServer(turns)
    await server.start()
    provider = openaicompat.openai("m", base_url=server.openai_base_url, api_key="k")
    memory = AgentMemory(store, provider, timeout=timeout, redact=redact)
    try:
        written = await memory.store(
            task=TASK,
            answer="The module path is example.com/demo.",
            transcript=transcript() if msgs is None else msgs,
            verified=verified,
            run_id="run-1",
        )
    finally:
        await provider.aclose()
        await server.aclose()
    return written, memory, server, store


@pytest.fixture
async def cleanup() -> AsyncIterator[list[MemoryStore]]:
    stores: list[MemoryStore] = []
    yield stores
    for s in stores:
        await s.aclose()


async def test_agent_memory_is_a_memory_hook(tmp_path: Path) -> None:
    async with await MemoryStore.open(tmp_path / "m.db", scope="s") as store:
        provider = openaicompat.openai("m", base_url="http://127.0.0.1:9/v1", api_key="k")
        assert isinstance(AgentMemory(store, provider), MemoryHook)
        await provider.aclose()


async def test_store_unverified_answer_writes_nothing_and_calls_no_model(
    tmp_path: Path, cleanup: list[MemoryStore]
) -> None:
    written, _, server, store = await run_store(tmp_path, [facts("x")], verified=False)
    cleanup.append(store)
    assert written == 0 and server.received == [] and await store.list_facts() == []


async def test_store_answer_from_recall_alone_writes_nothing(
    tmp_path: Path, cleanup: list[MemoryStore]
) -> None:
    # "verified" claimed, but no tool observed anything: the harness refuses on its own.
    msgs = [user(TASK), assistant("From memory: example.com/demo")]
    written, _, server, store = await run_store(tmp_path, [facts("x")], msgs=msgs)
    cleanup.append(store)
    assert written == 0 and server.received == []


async def test_store_adds_with_one_call_when_nothing_related(
    tmp_path: Path, cleanup: list[MemoryStore]
) -> None:
    written, memory, server, store = await run_store(
        tmp_path, [facts("go.mod declares the module path example.com/demo")]
    )
    cleanup.append(store)
    assert written == 1 and len(server.received) == 1
    sent = json.dumps(server.received[0].body)
    assert "TOOL RESULT read_file" in sent and "module example.com/demo" in sent
    [fact] = await store.list_facts()
    assert (fact.run_id, fact.task, fact.source) == ("run-1", TASK, "extract")
    assert fact.model == "m"
    assert memory.last_report is not None and memory.last_report.model_calls == 1


async def test_store_update_replaces_the_stale_fact(
    tmp_path: Path, cleanup: list[MemoryStore]
) -> None:
    written, memory, server, store = await run_store(
        tmp_path,
        [
            facts("go.mod declares the module path example.com/renamed"),
            decisions({"fact": "N1", "action": "UPDATE", "target": "E1"}),
        ],
        seed=["go.mod declares the module path example.com/demo"],
    )
    cleanup.append(store)
    assert written == 1 and len(server.received) == 2
    prompt = json.dumps(server.received[1].body)
    assert "E1 go.mod declares the module path example.com/demo" in prompt
    assert "N1 go.mod declares the module path example.com/renamed" in prompt
    [active] = await store.list_facts()
    [old] = await store.list_facts(status="superseded")
    assert active.text.endswith("example.com/renamed")
    assert old.superseded_by == active.id and "run-1" in old.why
    assert memory.last_report is not None and memory.last_report.updated == ((old.id, active.id),)


@pytest.mark.parametrize(
    "hostile",
    [
        Turn(text="I think you should update E1."),
        decisions({"fact": "N1", "action": "UPDATE", "target": "E42"}),
        decisions(
            {"action": "DELETE", "target": "N1"},
            {"fact": "N1", "action": "ADD"},
            {"fact": "N1", "action": "NONE", "target": "E1"},
        ),
        decisions(
            {"fact": "N1", "action": "NONE", "target": "E1"}, {"action": "DELETE", "target": "E1"}
        ),
    ],
    ids=["prose", "invented-id", "delete-new-and-duplicate", "delete-what-new-duplicates"],
)
async def test_store_hostile_decisions_lose_nothing(
    tmp_path: Path, cleanup: list[MemoryStore], hostile: Turn
) -> None:
    written, memory, _, store = await run_store(
        tmp_path,
        [facts("go.mod declares the module path example.com/renamed"), hostile],
        seed=["go.mod declares the module path example.com/demo"],
    )
    cleanup.append(store)
    assert written == 1
    assert sorted(f.text for f in await store.list_facts()) == [
        "go.mod declares the module path example.com/demo",
        "go.mod declares the module path example.com/renamed",
    ]
    assert memory.last_report is not None and memory.last_report.rejected


async def test_store_unusable_extraction_is_a_memory_error(
    tmp_path: Path, cleanup: list[MemoryStore]
) -> None:
    store = await MemoryStore.open(tmp_path / "mem.db", scope="s")
    cleanup.append(store)
    # Only the slow turn gets the short limit: on a loaded machine even a quick answer can
    # take longer than 0.5 s, which would turn the other cases into timeouts.
    for turn, match, limit in [
        (Turn(text="Sure, here are the facts: none"), "unusable", 30.0),
        (Turn(error=ScriptedError(status=400, message="bad model")), "extraction failed", 30.0),
        (Turn(text='{"facts": []}', delay_s=3.0), "timed out", 0.5),
    ]:
        async with ScriptedModelServer([turn]) as server:
            provider = openaicompat.openai("m", base_url=server.openai_base_url, api_key="k")
            memory = AgentMemory(store, provider, timeout=limit)
            with pytest.raises(MemoryStoreError, match=match):
                await memory.store(
                    task=TASK, answer="a", transcript=transcript(), verified=True, run_id="r"
                )
            await provider.aclose()
    assert await store.list_facts(status="all") == []


async def test_store_never_writes_a_fact_holding_a_secret(
    tmp_path: Path, cleanup: list[MemoryStore]
) -> None:
    written, memory, _, store = await run_store(
        tmp_path,
        [facts("the deploy token is sk-live-abcdef123", "CI runs go test")],
        redact=["sk-live-abcdef123"],
    )
    cleanup.append(store)
    assert written == 1 and [f.text for f in await store.list_facts()] == ["CI runs go test"]
    assert memory.last_report is not None
    assert "sk-live" not in json.dumps(memory.last_report.model_dump())


async def test_recall_returns_labelled_lines(tmp_path: Path) -> None:
    async with await MemoryStore.open(tmp_path / "m.db", scope="s") as store:
        [fid] = (
            await store.apply(
                adds=["go.mod declares module example.com/demo"], provenance=Provenance()
            )
        ).added
        provider = openaicompat.openai("m", base_url="http://127.0.0.1:9/v1", api_key="k")
        lines = await AgentMemory(store, provider).recall("What is this project's module path?")
        await provider.aclose()
    assert len(lines) == 1
    assert lines[0].startswith(f"go.mod declares module example.com/demo (memory #{fid}, verified ")


async def test_open_agent_memory_from_environment_is_hybrid_and_redacts(tmp_path: Path) -> None:
    from driveros.config import load_environment
    from driveros.memory import open_agent_memory
    from tests.memory._embedserver import EmbeddingServer
    from tests.memory.conftest import make_repo

    repo = make_repo(tmp_path / "repo")
    with EmbeddingServer() as embed:
        env = load_environment(
            cwd=tmp_path,
            trusted=True,  # a database inside the workspace is used only in a trusted one
            environ={
                "MNEME_EMBED_MODEL": "ollama:embed-a",
                "OLLAMA_HOST": embed.base_url.removesuffix("/v1"),
                "DRIVEROS_MEMORY_PATH": "state/memory.db",
                "DEPLOY_TOKEN": "tok-abcdef-123456",
            },
        )
        turns = [facts("the rows live in SQLite", "deploys use tok-abcdef-123456")]
        async with ScriptedModelServer(turns) as server:
            provider = openaicompat.openai("m", base_url=server.openai_base_url, api_key="k")
            memory = await open_agent_memory(repo, env, provider)
            try:
                written = await memory.store(
                    task=TASK, answer="a", transcript=transcript(), verified=True, run_id="r9"
                )
                assert written == 1
                assert [
                    line.split(" (memory #")[0] for line in await memory.recall("which database")
                ] == ["the rows live in SQLite"]
                stats = await memory.memory.stats()
                assert stats.embed_model == "ollama:embed-a" and stats.vectors == 1
                assert stats.path == str(repo / "state" / "memory.db")
            finally:
                await memory.aclose()
                await provider.aclose()
