"""``search``: ripgrep when it is on PATH, a Python fallback otherwise (both fence-safe).

Both start from a directory fd the fence verified and never follow symlinks. ripgrep gets
that directory as its working directory through ``/proc/<pid>/fd/<n>``, so a directory
swapped for a symlink after the check is not followed either.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fnmatch
import json
import os
import re
import shutil
import stat as st
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

from driveros.sandbox._paths import escape_name, is_git_name, is_safe_name
from driveros.sandbox._protocol import SearchError, SearchMatch, SearchResults

#: Lines longer than this are cut in results (minified files would flood the caller).
MAX_LINE_CHARS = 500
#: The Python fallback skips files larger than this (and names them in ``too_large``).
MAX_FALLBACK_FILE = 8 * 1024 * 1024
#: ripgrep searches hidden files too, never a ``.git`` directory (``.GIT`` and the other
#: spellings :func:`is_git_name` knows are dropped from the results as well).
RIPGREP_SCOPE = ["--hidden", "--glob", "!.git"]


def _clip(text: str) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + "…"


def _join(prefix: tuple[str, ...], rel: str) -> str:
    rel = rel.removeprefix("./")
    return "/".join((*prefix, rel)) if prefix else rel


#: Tells why a workspace-relative path is a deny-listed secret file (None: it is not).
SecretCheck = Callable[[str], str | None]

#: At most this many skipped secret files are named in one result.
MAX_SKIPPED_NAMES = 20

#: The whole environment host-side ripgrep gets: nothing of the caller's (no LD_PRELOAD, no
#: RIPGREP_CONFIG_PATH, no .env value) reaches a program we run on the host ourselves.
RIPGREP_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


def _hidden_from_search(path: str, is_secret: SecretCheck) -> bool:
    """A secret file, or anything inside a ``.git`` directory: never part of a result."""
    return any(is_git_name(p) for p in path.split("/")) or is_secret(path) is not None


async def _skipped_secrets(
    rg: str, cwd: str, prefix: tuple[str, ...], glob: str | None, is_secret: SecretCheck
) -> list[str]:
    """The secret files ripgrep would have searched (listed by name, never opened)."""
    argv = [rg, "--files", "--null", "--no-config", "--no-follow", *RIPGREP_SCOPE]
    if glob:
        argv += ["--glob", glob]
    argv += ["--", "."]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=RIPGREP_ENV,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True,
    )
    assert proc.stdout is not None
    found: list[str] = []
    try:
        pending = b""
        while chunk := await proc.stdout.read(64 * 1024):
            *names, pending = (pending + chunk).split(b"\0")
            for raw in names:
                name = raw.decode("utf-8", "replace")
                path = _join(prefix, name)
                if is_secret(path) is not None and not any(is_git_name(p) for p in path.split("/")):
                    found.append(path)
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await proc.wait()
    return sorted(found)


async def search_ripgrep(
    rg: str,
    dir_fd: int,
    prefix: tuple[str, ...],
    pattern: str,
    glob: str | None,
    max_results: int,
    env: Mapping[str, str],
    *,
    is_secret: SecretCheck = lambda _path: None,
) -> SearchResults:
    """Run ``rg --json`` in the verified directory ``dir_fd``; stop at ``max_results``.

    ``env`` is accepted for the protocol's sake and not used: ripgrep runs with
    :data:`RIPGREP_ENV` only. Matches in secret files are dropped; the secret files ripgrep
    would have searched are listed in ``skipped`` (all of them, matching or not).
    """
    del env
    cwd = f"/proc/{os.getpid()}/fd/{dir_fd}"
    argv = [rg, "--json", "--no-config", "--no-follow", "--binary", *RIPGREP_SCOPE]
    # An argument cannot carry a NUL byte; the regex escape means the same character.
    argv += ["--regexp", pattern.replace("\x00", "\\x00")]
    if glob:
        argv += ["--glob", glob]
    argv += ["--", "."]
    skipped_task = asyncio.ensure_future(_skipped_secrets(rg, cwd, prefix, glob, is_secret))
    try:
        results = await _ripgrep_matches(argv, cwd, prefix, pattern, glob, max_results, is_secret)
    except BaseException:
        skipped_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, OSError):
            await skipped_task
        raise
    try:
        skipped = await skipped_task
    except OSError:
        skipped = []
    results.skipped = tuple(skipped)
    return results


def _rg_text(field: object) -> str | None:
    """A ripgrep JSON ``{"text": ...}`` or ``{"bytes": base64}`` field as a str (undecodable
    bytes kept as surrogate escapes), or None."""
    if not isinstance(field, dict):
        return None
    if isinstance(field.get("text"), str):
        return str(field["text"])
    raw = field.get("bytes")
    if isinstance(raw, str):
        try:
            return base64.b64decode(raw).decode("utf-8", "surrogateescape")
        except ValueError:
            return None
    return None


async def _ripgrep_matches(
    argv: list[str],
    cwd: str,
    prefix: tuple[str, ...],
    pattern: str,
    glob: str | None,
    max_results: int,
    is_secret: SecretCheck,
) -> SearchResults:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=RIPGREP_ENV,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    results = SearchResults()
    binary: list[str] = []
    odd: list[str] = []
    # A file's matches wait for its ``end`` event: a binary file (``binary_offset``) is named
    # in ``binary`` and its lines (binary noise) are not shown.
    pending: list[SearchMatch] = []
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
            kind = event.get("type")
            if kind not in ("match", "end"):
                continue
            data = event.get("data") or {}
            path_text = _rg_text(data.get("path"))
            if path_text is None:
                continue
            path = _join(prefix, path_text)
            if _hidden_from_search(path, is_secret):
                continue  # named in ``skipped`` whether it matched or not
            if not is_safe_name(path_text):
                shown = escape_name(path)
                if shown not in odd:
                    odd.append(shown)
                continue  # no path the file tools take names it: reported, not listed
            if kind == "end":
                if data.get("binary_offset") is not None:
                    if pending:
                        binary.append(path)
                else:
                    results.extend(pending[: max_results - len(results)])
                pending = []
                continue
            line_text = _rg_text(data.get("lines"))
            if line_text is None:
                continue
            pending.append(
                SearchMatch(
                    path=path,
                    line=int(data.get("line_number") or 0),
                    text=_clip(escape_text(line_text)),
                )
            )
            if len(results) + len(pending) >= max_results:
                results.extend(pending[: max_results - len(results)])
                pending = []
    finally:
        if not finished and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await proc.wait()
        stderr = (await stderr_task).decode("utf-8", "replace")
    if proc.returncode == 2 and not results and ("regex" in stderr or "glob" in stderr):
        raise SearchError(f"invalid search pattern: {stderr.strip()}", pattern=pattern, glob=glob)
    results.binary = tuple(binary)
    results.odd_names = tuple(odd)
    return results


def search_python(
    dir_fd: int,
    prefix: tuple[str, ...],
    pattern: str,
    glob: str | None,
    max_results: int,
    is_secret: SecretCheck = lambda _path: None,
) -> SearchResults:
    """The fallback: walk with fds (no symlinks), hidden files included, never ``.git``.

    Secret files are never opened; they are listed in ``skipped``. Files over
    :data:`MAX_FALLBACK_FILE` are named in ``too_large``, binary ones that match in ``binary``,
    files
    whose names no path can give back in ``odd_names`` (escaped).
    """
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise SearchError(f"invalid search pattern: {exc}", pattern=pattern) from exc
    results = SearchResults()
    skipped: list[str] = []
    too_large: list[str] = []
    binary: list[str] = []
    odd: list[str] = []
    walk_fd = os.dup(dir_fd)
    try:
        for top, dirs, files, top_fd in os.fwalk(".", dir_fd=walk_fd, follow_symlinks=False):
            for name in dirs:
                if not is_safe_name(name) and not is_git_name(name):
                    odd.append(escape_name(_join(prefix, os.path.normpath(f"{top}/{name}"))) + "/")
            dirs[:] = sorted(d for d in dirs if not is_git_name(d) and is_safe_name(d))
            for name in sorted(files):
                rel = os.path.normpath(f"{top}/{name}")
                if glob and not (fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(name, glob)):
                    continue
                path = _join(prefix, rel)
                if not is_safe_name(name):
                    odd.append(escape_name(path))
                    continue
                if _hidden_from_search(path, is_secret):
                    skipped.append(path)
                    continue
                found = _grep_file(top_fd, name, regex)
                if found == "too_large":
                    too_large.append(path)
                    continue
                if found == "binary":
                    binary.append(path)
                    continue
                for number, text in found:
                    results.append(SearchMatch(path=path, line=number, text=text))
                    if len(results) >= max_results:
                        break
                if len(results) >= max_results:
                    break
            else:
                continue
            break
    finally:
        os.close(walk_fd)
    results.skipped = tuple(skipped)
    results.too_large = tuple(too_large)
    results.binary = tuple(binary)
    results.odd_names = tuple(odd)
    return results


def _grep_file(
    dir_fd: int, name: str, regex: re.Pattern[str]
) -> list[tuple[int, str]] | Literal["too_large", "binary"]:
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd
        )
    except OSError:
        return []
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not st.S_ISREG(info.st_mode):
            return []
        if info.st_size > MAX_FALLBACK_FILE:
            return "too_large"
        data = handle.read(MAX_FALLBACK_FILE + 1)
    if len(data) > MAX_FALLBACK_FILE:
        return "too_large"
    text = data.decode("utf-8", "replace")
    if b"\x00" in data[:8192]:  # binary: named when it matches, its lines never shown
        return "binary" if any(regex.search(line) for line in text.splitlines()) else []
    return [
        (number, _clip(line))
        for number, line in enumerate(text.splitlines(), start=1)
        if regex.search(line)
    ]


def escape_text(text: str) -> str:
    """Undecodable bytes in a matched line shown as ``\\xNN`` (never a lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text


def find_ripgrep(path: str | None, *, outside: Path | None = None) -> str | None:
    """ripgrep on the given PATH string, or None.

    Only absolute PATH entries count, and none inside ``outside`` (the workspace): an ``rg``
    the repository ships (``./bin/rg``, ``.venv/bin/rg``) would run on the host for a tool
    that is read-only.
    """
    if path is None:
        return None
    entries = []
    for entry in path.split(os.pathsep):
        if not entry.startswith("/"):
            continue
        if outside is not None:
            real = Path(os.path.realpath(entry))
            if real == outside or outside in real.parents:
                continue
        entries.append(entry)
    found = shutil.which("rg", path=os.pathsep.join(entries)) if entries else None
    if found is None:
        return None
    real = Path(os.path.realpath(found))
    if outside is not None and (real == outside or outside in real.parents):
        return None  # a symlink on PATH that leads into the workspace
    return found
