"""Value types of long-term memory: facts with harness-stamped provenance, and reports."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

FactStatus = Literal["active", "superseded", "forgotten"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Provenance(_Frozen):
    """Who wrote a fact. Stamped by the harness from the run, never taken from the model."""

    run_id: str = ""
    #: The model that extracted the fact ("" for imports and manual writes).
    model: str = ""
    task: str = ""
    #: "extract" (after a verified run), "import" or "manual".
    source: Literal["extract", "import", "manual"] = "extract"


class Fact(_Frozen):
    """One remembered statement about a repository, with its whole history."""

    id: int
    scope: str
    text: str
    status: FactStatus = "active"
    run_id: str = ""
    model: str = ""
    task: str = ""
    source: Literal["extract", "import", "manual"] = "extract"
    created_at: str
    updated_at: str
    #: The fact that replaced this one, when an update superseded it.
    superseded_by: int | None = None
    #: Why the status last changed (stamped by the harness).
    why: str = ""

    @property
    def active(self) -> bool:
        return self.status == "active"


class StoreReport(_Frozen):
    """What one ``AgentMemory.store`` did, for traces and tests."""

    extracted: int = 0
    added: tuple[int, ...] = ()
    updated: tuple[tuple[int, int], ...] = Field(
        default=(), description="(old fact id, new fact id) pairs"
    )
    retired: tuple[int, ...] = ()
    unchanged: int = 0
    #: Decisions the harness refused (unknown ids, duplicates, bad JSON), with the reason.
    rejected: tuple[str, ...] = ()
    model_calls: int = 0

    @property
    def written(self) -> int:
        return len(self.added) + len(self.updated)


class MemoryStats(_Frozen):
    path: str
    scope: str
    schema_version: int
    active: int
    superseded: int
    forgotten: int
    scopes: int
    embed_model: str | None = None
    embed_dim: int | None = None
    vectors: int = 0
    #: Active facts in this scope with no vector for the pinned model (see ``reembed``).
    missing_vectors: int = 0
    size_bytes: int = 0
