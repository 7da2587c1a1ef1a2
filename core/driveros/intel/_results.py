"""What one check produced: the cached result, how it was obtained, and helpers around it."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from driveros.diagnostics import DiagnosticItem
from driveros.intel._config import CheckSpec
from driveros.sandbox import CommandResult

#: Unparsed output kept per check (the rest is counted, not silently dropped).
_RAW_CAP = 4000


class CheckRun(BaseModel):
    """How one check was satisfied for the latest snapshot."""

    model_config = ConfigDict(frozen=True)

    name: str
    mode: Literal["full", "files", "cached", "unaffected", "server"]
    duration_ms: float = 0.0
    timed_out: bool = False
    exit_code: int | None = None
    files: tuple[str, ...] = Field(
        default=(), description="paths re-checked in files or server mode"
    )


class CheckResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    key: str
    items: tuple[DiagnosticItem, ...]
    raw: str
    hashes: dict[str, str]
    timed_out: bool = False
    #: spec_digest() of the check that produced it: results of another spec are not merged.
    spec: str = ""


def spec_digest(spec: CheckSpec) -> str:
    return hashlib.blake2b(spec.model_dump_json().encode(), digest_size=16).hexdigest()


def result_key(spec: CheckSpec, relevant: Mapping[str, str]) -> str:
    """The cache key: the whole spec plus the content hashes of its relevant files."""
    h = hashlib.blake2b(digest_size=16)
    h.update(spec_digest(spec).encode())
    for path in sorted(relevant):
        h.update(f"{path}\0{relevant[path]}\n".encode())
    return h.hexdigest()


def touched_paths(before: Mapping[str, str], after: Mapping[str, str]) -> set[str]:
    return {p for p in set(before) | set(after) if before.get(p) != after.get(p)}


def raw_section(spec: CheckSpec, res: CommandResult, unparsed: Sequence[str]) -> str:
    notes = []
    if res.stdout_truncated or res.stderr_truncated:
        notes.append("output was truncated at the sandbox's cap; diagnostics may be incomplete")
    if not unparsed and not notes:
        return ""
    text = "\n".join(unparsed)
    if len(text) > _RAW_CAP:
        text = f"{text[:_RAW_CAP]}\n... ({len(text) - _RAW_CAP} more characters not shown)"
    header = f"[{spec.name}] exit {res.exit_code}"
    return "\n".join([header, *notes, text]).rstrip()
