"""Which files the workspace has and what they contain (by content hash), through the sandbox.

The index walks the workspace with ``list_dir``/``stat`` and hashes a file only when its
size or mtime changed, or when the caller names it as changed. Directories that hold
tool output or dependencies (dot-directories, node_modules, virtualenvs, target/, build/,
dist/, __pycache__) are never walked.
"""

from __future__ import annotations

import asyncio
import hashlib
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from driveros._errors import SandboxError
from driveros.sandbox import FileTooLargeError, Sandbox

#: Directory names never walked (dot-directories are skipped as well).
SKIPPED_DIRS = frozenset(
    {"node_modules", "venv", "__pycache__", "target", "build", "dist", "site-packages"}
)

#: Concurrent sandbox file operations while scanning.
_SCAN_CONCURRENCY = 32


@lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    pat = pattern.strip()
    anchored = pat.startswith(("./", "/")) or "/" in pat.rstrip("/")
    pat = pat.removeprefix("./").lstrip("/")
    out = []
    i = 0
    while i < len(pat):
        c = pat[i]
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(c))
            i += 1
    body = "".join(out)
    if pat.endswith("/"):
        body += ".*"  # "dir/" means everything below it
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(f"^{prefix}{body}$")


def glob_match(path: str, patterns: Iterable[str]) -> bool:
    """Whether a workspace-relative path matches any glob (see CheckSpec.triggers)."""
    return any(_glob_regex(p).match(path) for p in patterns)


@dataclass(frozen=True)
class _Entry:
    size: int
    mtime: float
    digest: str


class FileIndex:
    """Content hashes of the workspace's files, refreshed incrementally."""

    def __init__(self, sandbox: Sandbox, *, exclude: Sequence[str] = ()) -> None:
        self._sandbox = sandbox
        self._exclude = tuple(exclude)
        self._entries: dict[str, _Entry] = {}

    @property
    def exclude(self) -> tuple[str, ...]:
        return self._exclude

    @property
    def hashes(self) -> Mapping[str, str]:
        return {p: e.digest for p, e in self._entries.items()}

    async def refresh(self, *, changed: Sequence[str] = ()) -> dict[str, str]:
        """Walk the workspace; rehash files whose stat changed or that ``changed`` names."""
        forced = {posixpath.normpath(p.removeprefix("./")) for p in changed}
        sem = asyncio.Semaphore(_SCAN_CONCURRENCY)
        files = await self._walk(sem)
        old = self._entries
        fresh: dict[str, _Entry] = {}

        async def one(path: str) -> None:
            async with sem:
                try:
                    st = await self._sandbox.stat(path)
                except SandboxError:
                    return  # vanished between listing and stat
                prev = old.get(path)
                if (
                    prev is not None
                    and path not in forced
                    and prev.size == st.size
                    and prev.mtime == st.mtime
                ):
                    fresh[path] = prev
                    return
                fresh[path] = _Entry(st.size, st.mtime, await self._digest(path, st.size, st.mtime))

        async with asyncio.TaskGroup() as tg:
            for path in files:
                tg.create_task(one(path))
        self._entries = fresh
        return {p: e.digest for p, e in fresh.items()}

    async def _digest(self, path: str, size: int, mtime: float) -> str:
        try:
            data = await self._sandbox.read_bytes(path)
        except FileTooLargeError:
            return f"large:{size}:{mtime}"
        except SandboxError:
            return f"unreadable:{size}:{mtime}"
        return hashlib.blake2b(data, digest_size=16).hexdigest()

    async def _walk(self, sem: asyncio.Semaphore) -> list[str]:
        files: list[str] = []
        level = ["."]
        while level:
            listings: list[tuple[str, list[tuple[str, str]]]] = []

            async def listing(d: str, into: list[tuple[str, list[tuple[str, str]]]]) -> None:
                async with sem:
                    try:
                        entries = await self._sandbox.list_dir(d)
                    except SandboxError:
                        return
                into.append((d, [(e.name, e.kind) for e in entries]))

            async with asyncio.TaskGroup() as tg:
                for d in level:
                    tg.create_task(listing(d, listings))
            level = []
            for d, entries in listings:
                for name, kind in entries:
                    rel = name if d == "." else f"{d}/{name}"
                    if self._exclude and glob_match(rel, self._exclude):
                        continue
                    if kind == "dir":
                        if not name.startswith(".") and name not in SKIPPED_DIRS:
                            level.append(rel)
                    elif kind == "file":
                        files.append(rel)
        return sorted(files)
