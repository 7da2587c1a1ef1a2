"""Adopting an editor buffer into a scratch copy while the agent works (a late overlay).

An overlay given at creation (``ScratchWorkspace.create(overlays=...)``) is written before the
baseline is recorded. A buffer learned later (the agent is about to read a file, and the
editor has unsaved text for it) must look the same: the copy gets the text, the baseline tree
is edited so the buffer is the file's "before" (a proposal diffs against it, not the disk),
and the disk's blob at start is remembered so applying checks the user's disk against what
it was (the same conflict rule as for every overlay).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from pathlib import Path

from driveros._finish import finish_then_reraise
from driveros._git import GitRepo, run_git
from driveros.review._files import atomic_write, blob_sha, check_relpath
from driveros.review._layout import Layout
from driveros.review._plan import path_problem

_REGULAR = ("100644", "100755")


async def _baseline_entry(lay: Layout, gitpath: str) -> tuple[str, str] | None:
    """(mode, blob id) of ``gitpath`` in the baseline tree; None when it is not a file there."""
    _, out, _ = await run_git(
        ["ls-tree", "-z", "--full-tree", lay.baseline, "--", gitpath],
        cwd=lay.work,
        repo=lay.private_repo,
    )
    for record in out.split(b"\0"):
        meta, _, name = record.partition(b"\t")
        fields = meta.split()
        if name.decode("utf-8", "surrogateescape") == gitpath and len(fields) == 3:
            mode, kind, sha = (f.decode() for f in fields)
            if kind == "blob" and mode in _REGULAR:
                return mode, sha
    return None


async def _git(
    lay: Layout, args: list[str], *, stdin: bytes | None = None, index_file: Path | None = None
) -> bytes:
    repo = GitRepo(git_dir=lay.git_dir, work_tree=lay.work, index_file=index_file, scratch=True)
    _, out, _ = await run_git(args, cwd=lay.work, repo=repo, stdin=stdin)
    return out


def _read_regular(path: Path) -> bytes | None:
    """The bytes of the copy's regular file at ``path`` (None: absent, a link, not a file)."""
    try:
        info = path.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return path.read_bytes()


async def adopt_buffer(lay: Layout, rel: str, text: str) -> bool:
    """Make ``text`` the copy's and the baseline's content of ``rel``; whether it changed.

    Nothing happens (False) when the path is not a regular file of the baseline (new, a
    symbolic link, left out), when the copy no longer holds the baseline's content (the agent
    changed the file: its version wins), when the path may not be written in the user's
    workspace (a link on the way, inside ``.git``) or when ``text`` is the file's content. The
    caller holds the scratch copy's lock.
    """
    if await asyncio.to_thread(path_problem, lay.workspace, rel) is not None:
        return False
    rel = check_relpath(rel)
    gitpath = f"{lay.prefix}{rel}"
    entry = await _baseline_entry(lay, gitpath)
    if entry is None:
        return False
    mode, base_sha = entry
    target = lay.path / rel
    now = await asyncio.to_thread(_read_regular, target)
    if now is None:
        return False
    # Hashed as ``git add`` would (the path's attributes apply), never written yet.
    hashed = await _git(lay, ["hash-object", f"--path={gitpath}", "--stdin"], stdin=now)
    if hashed.decode().strip() != base_sha:
        return False
    data = text.encode("utf-8")
    out = await _git(lay, ["hash-object", "-w", f"--path={gitpath}", "--stdin"], stdin=data)
    new_sha = out.decode().strip()
    if new_sha == base_sha:
        return False
    index = lay.git_dir / f"buffer-index-{os.getpid()}-{id(lay)}"
    try:
        await _git(lay, ["read-tree", lay.baseline], index_file=index)
        await _git(
            lay,
            ["update-index", "--add", "--cacheinfo", f"{mode},{new_sha},{gitpath}"],
            index_file=index,
        )
        tree = await _git(lay, ["write-tree"], index_file=index)
    finally:
        with contextlib.suppress(OSError):
            await asyncio.to_thread(index.unlink)

    async def adopt() -> None:
        await asyncio.to_thread(atomic_write, target, data, mode=mode, root=lay.path)
        # Applying checks the disk against what it held at start (the copy's bytes until
        # now), as for every overlay.
        lay.disk_baseline.setdefault(rel, blob_sha(now))
        lay.baseline = tree.decode().strip()

    # The copy and the baseline change together, even when the caller is canceled: a copy
    # holding the buffer over the old baseline would report the user's text as the agent's.
    await finish_then_reraise(adopt())
    return True
