"""driveros.memory.recall / driveros.memory.forget over the workspace's memory store.

Registered only when ``driveros.memory`` is installed; the store is opened per command (it is
a SQLite file shared with runs and the CLI) and closed before the answer. A store that cannot
be opened or read (damaged, read-only, disk full) answers RequestFailed with the store's own
message; an unknown or inactive fact id is InvalidParams.
"""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams

from driveros_lsp.features.commands import RequestFailed, command
from driveros_lsp.protocol import CMD_MEMORY_FORGET, CMD_MEMORY_RECALL

if TYPE_CHECKING:
    from driveros.memory import MemoryStore
    from driveros_lsp._server import DriverosLanguageServer


def available() -> bool:
    return importlib.util.find_spec("driveros.memory") is not None


async def _open(server: DriverosLanguageServer) -> MemoryStore:
    from driveros import DriverosError
    from driveros.config import load_environment
    from driveros.memory import open_memory_store

    try:
        root = server.workspace_root()
    except LookupError as exc:
        raise RequestFailed(str(exc)) from exc
    env = await asyncio.to_thread(load_environment, cwd=Path(root))
    try:
        return await open_memory_store(root, env)
    except (DriverosError, OSError) as exc:
        raise RequestFailed(f"memory unavailable: {exc}") from exc


def setup(server: DriverosLanguageServer) -> None:
    if not available():
        return

    @command(server, CMD_MEMORY_RECALL)
    async def recall(ls: Any, *args: Any) -> dict[str, Any]:
        from driveros_lsp._params import RecallParams, parse
        from driveros_lsp.protocol_models import Fact, RecallResult

        p = parse(CMD_MEMORY_RECALL, RecallParams, args)
        store = await _open(server)
        try:
            facts = await store.search(p.query, p.limit)
        finally:
            await store.aclose()
        return RecallResult(facts=[Fact.of(f) for f in facts]).wire()

    @command(server, CMD_MEMORY_FORGET)
    async def forget(ls: Any, *args: Any) -> dict[str, Any]:
        from driveros import MemoryStoreError
        from driveros_lsp._params import ForgetParams, parse
        from driveros_lsp.protocol_models import Fact, ForgetResult

        p = parse(CMD_MEMORY_FORGET, ForgetParams, args)
        store = await _open(server)
        try:
            fact = await store.forget(p.id, why=p.why)
        except MemoryStoreError as exc:
            if "fact_id" in exc.context:  # no such fact, or not an active one: the id is wrong
                raise JsonRpcInvalidParams(f"{CMD_MEMORY_FORGET}: {exc}") from exc
            raise
        finally:
            await store.aclose()
        return ForgetResult(fact=Fact.of(fact)).wire()
