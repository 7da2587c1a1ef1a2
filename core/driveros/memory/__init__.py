"""Long-term memory across runs: verified facts about a repository in embedded SQLite.

    store = await open_memory_store(workspace, env)
    facts = await store.search("module path", 8)
    await store.forget(facts[0].id); await store.undo()

    memory = await open_agent_memory(workspace, env, provider)   # a MemoryHook
    lines = await memory.recall(task)
    written = await memory.store(task=..., answer=..., transcript=..., verified=True, run_id=...)

    problems = await check_integrity(path)        # [] when sound (driveros memory doctor)

See docs/memory.md for what is stored, what may be stale, how to reset and how to recover a
damaged database.
"""

from driveros._errors import (
    MemoryDamagedError,
    MemoryDiskFullError,
    MemoryReadOnlyError,
    MemoryStoreError,
)
from driveros.memory._agent import (
    AgentMemory,
    format_fact,
    open_agent_memory,
    open_memory_store,
)
from driveros.memory._decide import parse_json_object
from driveros.memory._embed import Embedder, OpenAICompatEmbedder, embedder_from_env
from driveros.memory._health import Salvage, check_integrity, salvage_facts
from driveros.memory._models import Fact, FactStatus, MemoryStats, Provenance, StoreReport
from driveros.memory._place import Placement, default_db_path, memory_dir, place_store
from driveros.memory._schema import SCHEMA_VERSION
from driveros.memory._scope import DEFAULT_DB_NAME, scope_for
from driveros.memory._store import ApplyResult, MemoryStore

__all__ = [
    "DEFAULT_DB_NAME",
    "SCHEMA_VERSION",
    "AgentMemory",
    "ApplyResult",
    "Embedder",
    "Fact",
    "FactStatus",
    "MemoryDamagedError",
    "MemoryDiskFullError",
    "MemoryReadOnlyError",
    "MemoryStats",
    "MemoryStore",
    "MemoryStoreError",
    "OpenAICompatEmbedder",
    "Placement",
    "Provenance",
    "Salvage",
    "StoreReport",
    "check_integrity",
    "default_db_path",
    "embedder_from_env",
    "format_fact",
    "memory_dir",
    "open_agent_memory",
    "open_memory_store",
    "parse_json_object",
    "place_store",
    "salvage_facts",
    "scope_for",
]
