"""Leases: the record, under the state directory, of what one process created.

A lease is one JSON file ``<state>/leases/<id>.json`` naming its owner (pid, start time,
boot id, host), the paths it created (scratch copies, caches, sockets) and, for a scratch
worktree, the repository it registered in. The owner releases it when done; when the owner
died first, :func:`driveros.state.collect_garbage` removes what it names.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from driveros._finish import finish_then_reraise, thread_to_the_end
from driveros.state._cleanup import remove_paths
from driveros.state._owner import Owner
from driveros.state._paths import ensure_dir, state_dir, write_json_atomic

_VERSION = 1


class OwnerRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    pid: int = Field(gt=0)
    start: str = ""
    boot: str = ""
    host: str = ""


class Kept(BaseModel):
    """A lease kept past its owner (a proposal waiting for review): the caller's manifest."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    at: float
    manifest: dict[str, Any] = Field(default_factory=dict)
    #: Paths of the lease made again when the resources are reopened (a view's hide layer):
    #: removed, like every mount under the lease's paths, once no live process owns it.
    volatile: list[str] = Field(default_factory=list)


class LeaseRecord(BaseModel):
    """The JSON of one lease file (read back as hostile input: validated)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    version: int = _VERSION
    id: str = Field(pattern=r"^[0-9a-f]{8,64}$")
    kind: str = Field(max_length=64)
    owner: OwnerRecord
    created: float
    paths: list[str] = Field(default_factory=list)
    #: The repository whose worktree list may name one of ``paths``.
    repo: str | None = None
    #: The key of that repository's lock (its common git directory).
    lock_key: str | None = None
    kept: Kept | None = None
    detail: dict[str, Any] = Field(default_factory=dict)

    def owner_process(self) -> Owner:
        o = self.owner
        return Owner(pid=o.pid, start=o.start, boot=o.boot, host=o.host)


def new_lease_id() -> str:
    return secrets.token_hex(8)


def _leases_dir(state: Path) -> Path:
    return state / "leases"


class Lease:
    """A registration of resources owned by this process (see the module docstring).

    Create with ``await Lease.create(kind, paths=..., state=...)``; finish with
    :meth:`release` (remove the resources and the record) or :meth:`forget` (the caller
    removed them). :meth:`keep` lets the record outlive its owner until collected by age.
    """

    def __init__(self, record: LeaseRecord, *, state: Path) -> None:
        self._record = record
        self._state = state
        self._done = False

    @property
    def id(self) -> str:
        return self._record.id

    @property
    def record(self) -> LeaseRecord:
        return self._record

    @property
    def state(self) -> Path:
        return self._state

    @property
    def file(self) -> Path:
        return _leases_dir(self._state) / f"{self.id}.json"

    @classmethod
    async def create(
        cls,
        kind: str,
        *,
        paths: Sequence[str | Path] = (),
        repo: str | Path | None = None,
        lock_key: str | Path | None = None,
        detail: Mapping[str, Any] | None = None,
        lease_id: str | None = None,
        state: Path | None = None,
    ) -> Lease:
        """Register ``paths`` (absolute, named ``driveros-*``) as owned by this process.

        Write the lease before creating what it names, so a crash in between leaves
        nothing unregistered.
        """
        where = state or state_dir()
        me = Owner.current()
        record = LeaseRecord(
            id=lease_id or new_lease_id(),
            kind=kind,
            owner=OwnerRecord(pid=me.pid, start=me.start, boot=me.boot, host=me.host),
            created=time.time(),
            paths=[str(p) for p in paths],
            repo=str(repo) if repo is not None else None,
            lock_key=str(lock_key) if lock_key is not None else None,
            detail=dict(detail or {}),
        )
        lease = cls(record, state=where)
        try:
            await lease._write()
        except asyncio.CancelledError:
            await finish_then_reraise(lease.forget())
            raise
        return lease

    async def _write(self) -> None:
        def write() -> None:
            ensure_dir(_leases_dir(self._state))
            write_json_atomic(self.file, self._record.model_dump(mode="json"))

        # A plain to_thread would write the record after a cancellation already left the
        # caller: a registration no one holds (create), or one brought back after release.
        await thread_to_the_end(write)

    async def update(self, **changes: Any) -> None:
        """Rewrite the record with ``changes`` (e.g. ``repo=``, ``detail=``)."""
        for key in ("repo", "lock_key"):
            if changes.get(key) is not None:
                changes[key] = str(changes[key])
        if "paths" in changes:
            changes["paths"] = [str(p) for p in changes["paths"]]
        self._record = LeaseRecord.model_validate(
            {**self._record.model_dump(mode="json"), **changes}
        )
        await self._write()

    async def keep(
        self, manifest: Mapping[str, Any], *, volatile: Sequence[str | Path] = ()
    ) -> None:
        """Keep the resources past this process: garbage collection leaves them until
        :data:`KEPT_MAX_AGE_S` after this call (and only when no live process owns them).
        While no live process owns them, garbage collection unmounts whatever is mounted
        under the lease's paths and removes ``volatile`` (see :attr:`Kept.volatile`)."""
        kept = Kept(at=time.time(), manifest=dict(manifest), volatile=[str(p) for p in volatile])
        await self.update(kept=kept.model_dump())

    async def adopt(self) -> None:
        """Make this process the owner (a kept lease restored by a new server)."""
        me = Owner.current()
        await self.update(
            owner=OwnerRecord(pid=me.pid, start=me.start, boot=me.boot, host=me.host).model_dump()
        )

    async def release(self) -> None:
        """Remove every registered path (and worktree entries), then the record. Idempotent;
        finishes even when the caller is canceled."""
        if self._done:
            return
        await finish_then_reraise(self._release())

    async def _release(self) -> None:
        r = self._record
        await remove_paths(r.paths, repo_top=r.repo, lock_key=r.lock_key, state=self._state)
        await self.forget()

    async def forget(self) -> None:
        """Delete the record only (what it named is already gone)."""
        self._done = True
        await asyncio.to_thread(self.file.unlink, missing_ok=True)


def read_lease(path: Path) -> LeaseRecord | None:
    """The record in ``path``, or None when it is missing or not a valid lease. Blocking."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    if len(raw) > 1 << 20:
        return None
    try:
        record = LeaseRecord.model_validate(json.loads(raw))
    except (ValueError, ValidationError):
        return None
    return record if path.name == f"{record.id}.json" else None


async def list_leases(state: Path | None = None) -> list[Lease]:
    """Every valid lease in the state directory (any owner), oldest first."""
    where = state or state_dir()

    def scan() -> list[LeaseRecord]:
        folder = _leases_dir(where)
        records: list[LeaseRecord] = []
        with contextlib.suppress(FileNotFoundError):
            for entry in folder.iterdir():
                if entry.name.startswith(".") or entry.suffix != ".json":
                    continue
                record = read_lease(entry)
                if record is not None:
                    records.append(record)
        return sorted(records, key=lambda r: r.created)

    return [Lease(r, state=where) for r in await asyncio.to_thread(scan)]


async def kept_leases(kind: str | None = None, *, state: Path | None = None) -> list[Lease]:
    """The kept leases (optionally of one ``kind``), oldest first."""
    return [
        lease
        for lease in await list_leases(state)
        if lease.record.kept is not None and (kind is None or lease.record.kind == kind)
    ]
