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
    mtime: str
    digest: str


def _find_command() -> str:
    """One GNU find listing every file as ``size\tmtime\tpath\0``, pruning skipped dirs."""
    names = " -o ".join(f"-name {n}" for n in sorted(SKIPPED_DIRS))
    return (
        f"find . -mindepth 1 -type d \\( -name '.*' -o {names} \\) -prune "
        "-o -type f -printf '%s\\t%T@\\t%P\\0'"
    )


class FileIndex:
    """Content hashes of the workspace's files, refreshed incrementally.

    Listing uses one ``find`` in the sandbox (sizes and mtimes for every file at once);
    where that is unavailable (no GNU find, output over the cap) it walks with
    ``list_dir``/``stat``, which is correct but slower on big trees.
    """

    def __init__(self, sandbox: Sandbox, *, exclude: Sequence[str] = ()) -> None:
        self._sandbox = sandbox
        self._exclude = tuple(exclude)
        self._entries: dict[str, _Entry] = {}
        self._use_find = True

    @property
    def exclude(self) -> tuple[str, ...]:
        return self._exclude

    @property
    def method(self) -> str:
        """How the workspace is listed: "find" (one command) or "walk" (list_dir/stat)."""
        return "find" if self._use_find else "walk"

    @property
    def hashes(self) -> Mapping[str, str]:
        return {p: e.digest for p, e in self._entries.items()}

    async def refresh(self, *, changed: Sequence[str] = ()) -> dict[str, str]:
        """List the workspace; rehash files whose size or mtime changed or that ``changed``
        names (an edit within the mtime's resolution is still caught that way)."""
        forced = {posixpath.normpath(p.removeprefix("./")) for p in changed}
        sem = asyncio.Semaphore(_SCAN_CONCURRENCY)
        listing = await self._find() if self._use_find else None
        if listing is None:
            self._use_find = False
            listing = await self._walk(sem)
        if self._exclude:
            listing = {p: v for p, v in listing.items() if not glob_match(p, self._exclude)}
        old = self._entries
        fresh: dict[str, _Entry] = {}

        async def one(path: str, size: int, mtime: str) -> None:
            async with sem:
                fresh[path] = _Entry(size, mtime, await self._digest(path, size, mtime))

        async with asyncio.TaskGroup() as tg:
            for path, (size, mtime) in listing.items():
                prev = old.get(path)
                if (
                    prev is not None
                    and path not in forced
                    and (prev.size, prev.mtime) == (size, mtime)
                ):
                    fresh[path] = prev
                else:
                    tg.create_task(one(path, size, mtime))
        self._entries = dict(sorted(fresh.items()))
        return {p: e.digest for p, e in self._entries.items()}

    async def _digest(self, path: str, size: int, mtime: str) -> str:
        try:
            data = await self._sandbox.read_bytes(path)
        except FileTooLargeError:
            return f"large:{size}:{mtime}"
        except SandboxError:
            return f"unreadable:{size}:{mtime}"
        return hashlib.blake2b(data, digest_size=16).hexdigest()

    async def _find(self) -> dict[str, tuple[int, str]] | None:
        try:
            res = await self._sandbox.run(_find_command(), timeout=60)
        except SandboxError:
            return None
        if not res.ok or res.stdout_truncated:
            return None
        out: dict[str, tuple[int, str]] = {}
        for record in res.stdout.split("\0"):
            parts = record.split("\t", 2)
            if len(parts) != 3 or not parts[0].isdigit():
                continue
            out[parts[2]] = (int(parts[0]), parts[1])
        return out

    async def _walk(self, sem: asyncio.Semaphore) -> dict[str, tuple[int, str]]:
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
                # an escaped name (not UTF-8) names no path: it cannot be checked either
                into.append((d, [(e.name, e.kind) for e in entries if e.addressable]))

            async with asyncio.TaskGroup() as tg:
                for d in level:
                    tg.create_task(listing(d, listings))
            level = []
            for d, entries in listings:
                for name, kind in entries:
                    rel = name if d == "." else f"{d}/{name}"
                    if kind == "dir":
                        if not name.startswith(".") and name not in SKIPPED_DIRS:
                            level.append(rel)
                    elif kind == "file":
                        files.append(rel)
        out: dict[str, tuple[int, str]] = {}

        async def one(path: str) -> None:
            async with sem:
                try:
                    st = await self._sandbox.stat(path)
                except SandboxError:
                    return  # vanished between listing and stat
                out[path] = (st.size, repr(st.mtime))

        async with asyncio.TaskGroup() as tg:
            for path in files:
                tg.create_task(one(path))
        return out
