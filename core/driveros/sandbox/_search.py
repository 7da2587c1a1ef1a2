"""``search``: ripgrep when it is on PATH, a Python fallback otherwise (both fence-safe).

Both start from a directory fd the fence verified and never follow symlinks. ripgrep gets
that directory as its working directory through ``/proc/<pid>/fd/<n>``, so a directory
swapped for a symlink after the check is not followed either.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import json
import os
import re
import shutil
import stat as st
from collections.abc import Mapping

from driveros.sandbox._paths import is_safe_name
from driveros.sandbox._protocol import SearchError, SearchMatch

#: Lines longer than this are cut in results (minified files would flood the caller).
MAX_LINE_CHARS = 500
#: The Python fallback skips files larger than this.
MAX_FALLBACK_FILE = 8 * 1024 * 1024


def _clip(text: str) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + "…"


def _join(prefix: tuple[str, ...], rel: str) -> str:
    rel = rel.removeprefix("./")
    return "/".join((*prefix, rel)) if prefix else rel


async def search_ripgrep(
    rg: str,
    dir_fd: int,
    prefix: tuple[str, ...],
    pattern: str,
    glob: str | None,
    max_results: int,
    env: Mapping[str, str],
) -> list[SearchMatch]:
    """Run ``rg --json`` in the verified directory ``dir_fd``; stop at ``max_results``."""
    argv = [rg, "--json", "--no-config", "--no-follow", "--regexp", pattern]
    if glob:
        argv += ["--glob", glob]
    argv += ["--", "."]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=f"/proc/{os.getpid()}/fd/{dir_fd}",
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    results: list[SearchMatch] = []
    stderr_task = asyncio.ensure_future(proc.stderr.read(64 * 1024))
    finished = False
    try:
        while len(results) < max_results:
            line = await proc.stdout.readline()
            if not line:
                finished = True
                break
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("type") != "match":
                continue
            data = event["data"]
            path_text = data.get("path", {}).get("text")
            line_text = data.get("lines", {}).get("text")
            if path_text is None or line_text is None or not is_safe_name(path_text):
                continue  # a non-UTF-8 name or line: not representable, skipped
            results.append(
                SearchMatch(
                    path=_join(prefix, path_text),
                    line=int(data.get("line_number") or 0),
                    text=_clip(line_text),
                )
            )
    finally:
        if not finished and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await proc.wait()
        stderr = (await stderr_task).decode("utf-8", "replace")
    if proc.returncode == 2 and not results and ("regex" in stderr or "glob" in stderr):
        raise SearchError(f"invalid search pattern: {stderr.strip()}", pattern=pattern, glob=glob)
    return results


def search_python(
    dir_fd: int, prefix: tuple[str, ...], pattern: str, glob: str | None, max_results: int
) -> list[SearchMatch]:
    """The fallback: walk with fds (no symlinks), skip hidden entries and binary files."""
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise SearchError(f"invalid search pattern: {exc}", pattern=pattern) from exc
    results: list[SearchMatch] = []
    walk_fd = os.dup(dir_fd)
    try:
        for top, dirs, files, top_fd in os.fwalk(".", dir_fd=walk_fd, follow_symlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and is_safe_name(d))
            for name in sorted(files):
                if name.startswith(".") or not is_safe_name(name):
                    continue
                rel = os.path.normpath(f"{top}/{name}")
                if glob and not (fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(name, glob)):
                    continue
                for number, text in _grep_file(top_fd, name, regex):
                    results.append(SearchMatch(path=_join(prefix, rel), line=number, text=text))
                    if len(results) >= max_results:
                        return results
    finally:
        os.close(walk_fd)
    return results


def _grep_file(dir_fd: int, name: str, regex: re.Pattern[str]) -> list[tuple[int, str]]:
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except OSError:
        return []
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not st.S_ISREG(info.st_mode) or info.st_size > MAX_FALLBACK_FILE:
            return []
        data = handle.read()
    if b"\x00" in data[:8192]:
        return []
    text = data.decode("utf-8", "replace")
    return [
        (number, _clip(line))
        for number, line in enumerate(text.splitlines(), start=1)
        if regex.search(line)
    ]


def find_ripgrep(path: str | None) -> str | None:
    """ripgrep on the given PATH string, or None."""
    return shutil.which("rg", path=path)
