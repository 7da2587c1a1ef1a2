"""``AgentMemory``: the :class:`~driveros.agent._hooks.MemoryHook` the agent loop calls.

recall → ranked facts as short strings (the agent labels them "possibly stale").
store  → one extraction call, then one consolidation call only when related facts exist;
the harness validates the decisions and writes them with provenance it stamps itself.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from driveros._errors import DriverosError, MemoryStoreError
from driveros.agent import Redactor, dotenv_secret_values
from driveros.config import Environment
from driveros.llm import Message, Provider, Request, system, user
from driveros.memory._decide import (
    CONSOLIDATE_SYSTEM,
    EXTRACT_SYSTEM,
    DecisionError,
    consolidation_prompt,
    observed_state,
    parse_extraction,
    plan_decisions,
    render_transcript,
)
from driveros.memory._embed import embedder_from_env
from driveros.memory._models import Fact, Provenance, StoreReport
from driveros.memory._place import Placement, place_store, record_created, registered
from driveros.memory._scope import exclude_from_git
from driveros.memory._store import MemoryStore
from driveros.sandbox import dotenv_assignments

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 30.0
_RELATED_PER_FACT = 5
_MAX_RELATED = 20


def format_fact(fact: Fact, *, foreign: bool = False) -> str:
    """How a recalled fact reads in the prompt: the text, its id and its provenance. Only a
    fact this user's driveros extracted from a verified run is labelled verified; every
    fact of a ``foreign`` database (one driveros did not create) is not."""
    date = fact.updated_at[:10]
    if foreign:
        how = f"from a database driveros did not create, {date}, not verified by driveros"
    elif fact.source == "extract":
        how = f"verified {date} by a driveros run"
    elif fact.source == "import":
        how = f"imported {date}, not verified by driveros"
    else:
        how = f"written {date} by hand, not verified by driveros"
    return f"{fact.text} (memory #{fact.id}, {how})"


class AgentMemory:
    """Long-term memory for agent runs. Every call is bounded by ``timeout`` seconds and
    raises only :class:`~driveros.MemoryStoreError` (the agent reports it and goes on).

    ``redact`` lists secret values: a fact containing one is never written.
    """

    def __init__(
        self,
        store: MemoryStore,
        provider: Provider,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        redact: Sequence[str] = (),
    ) -> None:
        self.memory = store
        self.provider = provider
        self.timeout = timeout
        #: Known values and token shapes: a fact holding one is never written (docs/memory.md).
        self._redactor = Redactor(s for s in redact if s)
        #: What the last :meth:`store` call did (for traces and tests).
        self.last_report: StoreReport | None = None

    async def recall(self, task: str, *, limit: int = 8) -> list[str]:
        try:
            async with asyncio.timeout(self.timeout):
                facts = await self.memory.search(task, limit)
        except TimeoutError as exc:
            raise MemoryStoreError(f"memory recall timed out after {self.timeout}s") from exc
        return [format_fact(f, foreign=self.memory.foreign) for f in facts]

    async def store(
        self,
        *,
        task: str,
        answer: str,
        transcript: Sequence[Message],
        verified: bool,
        run_id: str,
    ) -> int:
        """Extract and write what this run verified; returns how many facts were written.

        Nothing is written (and no model is called) unless the answer was verified by a tool
        that observed real state in this run.
        """
        self.last_report = StoreReport()
        if not verified or not observed_state(transcript):
            return 0
        try:
            async with asyncio.timeout(self.timeout):
                report = await self._store(task, answer, transcript, run_id)
        except TimeoutError as exc:
            raise MemoryStoreError(
                f"memory store timed out after {self.timeout}s", run_id=run_id
            ) from exc
        except DecisionError as exc:
            raise MemoryStoreError(f"memory extraction unusable: {exc}", run_id=run_id) from exc
        except MemoryStoreError:
            raise
        except DriverosError as exc:
            raise MemoryStoreError(
                f"memory extraction failed: {exc}", run_id=run_id, cause=type(exc).__name__
            ) from exc
        self.last_report = report
        for reason in report.rejected:
            log.warning("memory: rejected %s", reason)
        return report.written

    async def _ask(self, system_text: str, user_text: str) -> tuple[str, str]:
        resp = await self.provider.generate(
            Request(messages=(system(system_text), user(user_text)), max_tokens=2000)
        )
        return resp.text(), resp.model or self.provider.model

    async def _store(
        self, task: str, answer: str, transcript: Sequence[Message], run_id: str
    ) -> StoreReport:
        text, model = await self._ask(EXTRACT_SYSTEM, render_transcript(task, answer, transcript))
        rejected: list[str] = []
        facts = []
        for fact in parse_extraction(text):
            if self._redactor.contains_secret(fact):
                rejected.append("a fact containing a secret value")
            else:
                facts.append(fact)
        calls = 1
        if not facts:
            return StoreReport(model_calls=calls, rejected=tuple(rejected))
        related: dict[int, Fact] = {}
        for fact in facts:
            for hit in await self.memory.search(fact, _RELATED_PER_FACT):
                related.setdefault(hit.id, hit)
        existing = [(f.id, f.text) for f in list(related.values())[:_MAX_RELATED]]
        decisions: str | None = None
        if existing:
            decisions, _ = await self._ask(
                CONSOLIDATE_SYSTEM, consolidation_prompt([t for _, t in existing], facts)
            )
            calls += 1
        plan = plan_decisions(decisions, existing, facts)
        result = await self.memory.apply(
            adds=plan.adds,
            updates=plan.updates,
            retires=plan.retires,
            provenance=Provenance(run_id=run_id, model=model, task=task[:500]),
        )
        return StoreReport(
            extracted=len(facts),
            added=tuple(result.added),
            updated=tuple(result.updated),
            retired=tuple(result.retired),
            unchanged=plan.unchanged,
            rejected=(*rejected, *plan.rejected),
            model_calls=calls,
        )

    async def aclose(self) -> None:
        """Close the store (the provider belongs to the caller)."""
        await self.memory.aclose()


async def open_memory_store(
    workspace: Path,
    env: Environment,
    *,
    path: Path | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    with_embedder: bool = True,
    inspect: bool = False,
    placement: Placement | None = None,
    check: Literal["full", "quick"] = "full",
) -> MemoryStore:
    """Open the memory of ``workspace``: ``path``, ``DRIVEROS_MEMORY_PATH`` or the state
    directory's database for its repository (see :func:`place_store`).

    A database inside the workspace that driveros did not create for this user raises
    :class:`~driveros.MemoryStoreError` unless ``inspect``; a new one is added to
    ``.git/info/exclude`` and recorded in the state directory. ``store.notices`` lists the
    databases found in the workspace and ignored. ``placement``: the caller's own
    :func:`place_store` result, for the same arguments. ``check``: see
    :meth:`MemoryStore.open`.
    """
    if placement is None:
        placement = await place_store(workspace, env, path=path, inspect=inspect)
    db_path = placement.path
    created = not await asyncio.to_thread(os.path.lexists, db_path)
    if created and not placement.in_workspace:
        await asyncio.to_thread(db_path.parent.mkdir, mode=0o700, parents=True, exist_ok=True)
    embedder = embedder_from_env(env) if with_embedder else None
    try:
        store = await MemoryStore.open(
            db_path, scope=placement.scope, embedder=embedder, timeout=timeout, check=check
        )
    except BaseException:
        if embedder is not None:
            await embedder.aclose()
        raise
    store.notices = placement.notices
    if created and placement.in_workspace:
        await exclude_from_git(db_path)
    if created and not placement.default:
        await record_created(db_path, env)
    # A file driveros did not create (someone's shared database): its facts are not ours.
    store.foreign = not (
        placement.default or created or await asyncio.to_thread(registered, db_path, env)
    )
    return store


async def open_agent_memory(
    workspace: Path,
    env: Environment,
    provider: Provider,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    secrets: Sequence[str] | None = None,
) -> AgentMemory:
    """The :class:`AgentMemory` for ``workspace``: what ``driveros agent --memory`` uses.

    ``secrets``: the values no stored fact may hold, when the caller already knows them (a
    run's redactor); None reads them: the environment's and every ``.env*`` value in the
    workspace. Raises :class:`~driveros.MemoryStoreError` (or ``ConfigError`` for a bad
    ``MNEME_EMBED_MODEL``) when the store cannot be opened.
    """
    # A run recalls at its start and writes at its end: the full check waits for the write.
    store = await open_memory_store(workspace, env, timeout=timeout, check="quick")
    if secrets is None:
        dotenv = await asyncio.to_thread(dotenv_assignments, workspace, recursive=True)
        secrets = [*env.secret_values(), *dotenv_secret_values(dotenv)]
    return AgentMemory(store, provider, timeout=timeout, redact=secrets)
