"""What the agent changed: the copy compared with its baseline tree in the private index."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

from driveros._errors import GitError
from driveros._git import run_git, split_z
from driveros.review._diff import unified_diff
from driveros.review._indexed import IndexedFiles
from driveros.review._layout import Layout
from driveros.review._models import FileChange
from driveros.review._overlay import VIEW_STRATEGIES, upper_candidates
from driveros.review._stage import add_paths
from driveros.sandbox import is_host_run_file

#: Blobs larger than this are reported without their text (treated like binaries).
MAX_TEXT_BYTES = 2 * 1024 * 1024
_NULL_SHA = "0" * 40
_GITLINK = "160000"


@dataclass
class _Raw:
    status: str
    path: str
    old_mode: str
    new_mode: str
    old_sha: str | None
    new_sha: str | None


def _never_proposed(path: str) -> bool:
    """A trusted workspace's hooks file (any case): its commands run as the user, outside any
    sandbox, so a run never proposes it, whoever wrote it in the copy (docs/security.md)."""
    return is_host_run_file(tuple(path.split("/")))


def _parse_raw(data: bytes) -> list[_Raw]:
    parts = data.split(b"\0")
    out: list[_Raw] = []
    i = 0
    while i + 1 < len(parts):
        meta = parts[i].decode()
        if not meta.startswith(":"):
            i += 1
            continue
        old_mode, new_mode, old_sha, new_sha, status = meta[1:].split(" ")
        path = parts[i + 1].decode("utf-8", "surrogateescape")
        i += 2
        if _GITLINK in (old_mode, new_mode):
            continue  # submodules are not part of a proposal
        out.append(
            _Raw(
                status=status[0],
                path=path,
                old_mode=old_mode,
                new_mode=new_mode,
                old_sha=None if old_sha == _NULL_SHA else old_sha,
                new_sha=None if new_sha == _NULL_SHA else new_sha,
            )
        )
    return out


async def _read_blobs(lay: Layout, shas: set[str]) -> dict[str, bytes | None]:
    """Blob contents by id; None for blobs above :data:`MAX_TEXT_BYTES`."""
    if not shas:
        return {}
    ordered = sorted(shas)
    _, check, _ = await run_git(
        ["cat-file", "--batch-check"],
        cwd=lay.work,
        repo=lay.private_store,
        stdin="".join(f"{s}\n" for s in ordered).encode(),
    )
    small: list[str] = []
    result: dict[str, bytes | None] = {}
    for line in check.decode().splitlines():
        sha, _kind, size_text = line.split(" ")
        if int(size_text) <= MAX_TEXT_BYTES:
            small.append(sha)
        else:
            result[sha] = None
    if small:
        _, data, _ = await run_git(
            ["cat-file", "--batch"],
            cwd=lay.work,
            repo=lay.private_store,
            stdin="".join(f"{s}\n" for s in small).encode(),
        )
        pos = 0
        for _ in small:
            nl = data.index(b"\n", pos)
            sha, _kind, size_text = data[pos:nl].decode().split(" ")
            end = nl + 1 + int(size_text)
            result[sha] = data[nl + 1 : end]
            pos = end + 1
    return result


def _decode(data: bytes | None) -> str | None:
    """Text of a blob, or None when it is binary (NUL byte or not UTF-8) or oversized."""
    if data is None or b"\0" in data[:8000]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


async def _add_overlay_changes(lay: Layout) -> None:
    """``git add -A`` of only what the upper layer holds: proportional to the run's writes.

    Ignored untracked paths are left out (as ``add -A`` of the whole tree would), and a path
    gone from both the view and the private index has nothing left to record."""

    def listed() -> list[str]:
        # Inside a nested repository: never part of a proposal (as for a worktree or copy).
        found = upper_candidates(lay.upper, lay.prefix, lay.hidden)
        return [p for p in found if not _in_nested_repo(lay.work, p)]

    listed_now = await asyncio.to_thread(listed)
    # A file the run made and then removed leaves nothing in the upper layer: what this
    # staging recorded before is named again, so such a removal is recorded too.
    seen = set(listed_now)
    candidates = listed_now + sorted(p for p in lay.staged if p not in seen)
    if not candidates:
        return
    tracked = await _tracked(lay)
    ignored = await _ignored(lay, [p for p in candidates if p not in tracked])
    wanted = [p for p in candidates if p not in ignored]
    gone = await asyncio.to_thread(lambda: [p for p in wanted if not os.path.lexists(lay.work / p)])
    if gone:
        known: list[str] = []
        for i in range(0, len(gone), 500):
            _, known_out, _ = await run_git(
                ["ls-files", "-z", "--cached", "--", *gone[i : i + 500]],
                cwd=lay.work,
                repo=lay.private_repo,
            )
            known.extend(split_z(known_out))
        still = {p for p in gone if any(k == p or k.startswith(p + "/") for k in known)}
        wanted = [p for p in wanted if p not in gone or p in still]
    # A tracked file inside an ignored directory (a vendored node_modules) is named alone:
    # `add` refuses such a pathspec unless forced, and the untracked ignored ones are gone
    # from `wanted` already. A directory is never forced (its ignored contents stay out).
    dirs = await asyncio.to_thread(lambda: {p for p in wanted if (lay.work / p).is_dir()})
    await add_paths(lay, [p for p in wanted if p in dirs])
    await add_paths(lay, [p for p in wanted if p not in dirs], force=True)
    # What the index now holds of them: each file named alone; a directory's files are
    # not known here (they are asked about next time); a gone path left with its files.
    for p in gone:
        tracked.discard(p)
    lay.staged.difference_update(gone)
    lay.staged.update(p for p in wanted if p not in gone)
    for p in wanted:
        if p in dirs:
            tracked.add_directory(p)
        elif p not in gone:
            tracked.add_file(p)
    lay.tracked = tracked


async def _tracked(lay: Layout) -> IndexedFiles:
    """The files the private index holds (read once, then kept by the staging above)."""
    if lay.tracked is None:
        _, out, _ = await run_git(
            ["ls-files", "-z", "--cached"],
            cwd=lay.work,
            repo=lay.private_repo,
        )
        lay.tracked = IndexedFiles(split_z(out))
    return lay.tracked


async def _ignored(lay: Layout, paths: list[str]) -> set[str]:
    """Which of ``paths`` (not in the index) an ignore rule matches."""
    if not paths:
        return set()
    # check-ignore takes file names, not pathspecs: no magic.
    code, out, err = await run_git(
        ["check-ignore", "--stdin", "-z"],
        cwd=lay.work,
        repo=lay.private_repo,
        stdin=b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths),
        check=False,
        literal=False,
    )
    if code not in (0, 1):  # 1: none of them is ignored
        raise GitError(
            f"git check-ignore failed: {err.decode('utf-8', 'replace').strip()}",
            args=["check-ignore"],
            returncode=code,
            cwd=str(lay.work),
        )
    return set(split_z(out))


def _in_nested_repo(work: Path, rel: str) -> bool:
    """Whether a directory above ``rel`` (below ``work``) holds a ``.git`` of its own."""
    parts = rel.split("/")[:-1]
    return any(os.path.lexists(work.joinpath(*parts[: i + 1], ".git")) for i in range(len(parts)))


def _rel(lay: Layout, path: str) -> str:
    return path[len(lay.prefix) :] if lay.prefix and path.startswith(lay.prefix) else path


async def stage_all(lay: Layout) -> None:
    """Record the copy as it is now in the private index (a view: only its upper layer)."""
    if lay.strategy in VIEW_STRATEGIES:
        await _add_overlay_changes(lay)
    else:
        await run_git(
            ["add", "-A", *lay.pathspec],
            cwd=lay.work,
            repo=lay.private_repo,
        )


async def compute_changes(lay: Layout) -> list[FileChange]:
    """Every difference between the copy now and the baseline, sorted by path."""
    await stage_all(lay)
    _, raw, _ = await run_git(
        [
            "diff-index",
            "--cached",
            "--raw",
            "-z",
            "--no-renames",
            "--no-abbrev",
            lay.baseline,
            *lay.pathspec,
        ],
        cwd=lay.work,
        repo=lay.private_repo,
    )
    return await changes_from_raw(lay, raw)


async def changes_from_raw(lay: Layout, raw: bytes) -> list[FileChange]:
    """The changes a ``--raw -z --no-renames --no-abbrev`` diff of the private repository
    lists (``diff-index`` or ``diff-tree``), sorted by path."""
    entries = [e for e in _parse_raw(raw) if not _never_proposed(e.path)]
    # Renames: a deleted and a created file with identical content, paired in path order.
    created = {e.new_sha: e for e in entries if e.status == "A" and e.new_sha}
    renamed_from: dict[str, _Raw] = {}
    for e in entries:
        if e.status == "D" and e.old_sha in created:
            target = created.pop(e.old_sha)
            renamed_from[target.path] = e
    consumed = {id(e) for e in renamed_from.values()}
    blobs = await _read_blobs(
        lay, {s for e in entries for s in (e.old_sha, e.new_sha) if s is not None}
    )
    changes: list[FileChange] = []
    for e in entries:
        if id(e) in consumed:
            continue
        src = renamed_from.get(e.path)
        if src is not None:
            action, old_sha, old_mode, old_path = "rename", src.old_sha, src.old_mode, src.path
        elif e.status == "A":
            action, old_sha, old_mode, old_path = "create", None, None, None
        elif e.status == "D":
            action, old_sha, old_mode, old_path = "delete", e.old_sha, e.old_mode, None
        else:
            action, old_sha, old_mode, old_path = "modify", e.old_sha, e.old_mode, None
        new_sha = None if action == "delete" else e.new_sha
        before_b = blobs.get(old_sha) if old_sha else None
        after_b = blobs.get(new_sha) if new_sha else None
        before = _decode(before_b)
        after = _decode(after_b)
        binary = (old_sha is not None and before is None) or (new_sha is not None and after is None)
        if binary:
            before = after = None
        path = _rel(lay, e.path)
        rel_old = _rel(lay, old_path) if old_path else None
        mode = None if action == "delete" else e.new_mode
        diff, adds, dels = unified_diff(
            path=path,
            action=action,
            old_path=rel_old,
            before=before,
            after=after,
            binary=binary,
            mode=mode,
            old_mode=old_mode,
        )
        changes.append(
            FileChange(
                path=path,
                action=action,
                old_path=rel_old,
                before=before,
                after=after,
                binary=binary,
                diff=diff,
                before_sha=old_sha,
                after_sha=new_sha,
                mode=mode,
                additions=adds,
                deletions=dels,
            )
        )
    return sorted(changes, key=lambda c: c.path)
