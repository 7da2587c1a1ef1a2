"""Recording files in a scratch copy's private index (:func:`stage`, :func:`add_paths`), with
the fallback reader for a tree that changes while git reads it (:func:`read_entries`)."""

from __future__ import annotations

import logging
import os
import stat
import zlib
from pathlib import Path

from driveros._finish import thread_to_the_end
from driveros._git import GitResult, run_git, split_z
from driveros.review._files import blob_sha, open_parent
from driveros.review._layout import Layout

log = logging.getLogger(__name__)


async def add_paths(lay: Layout, relpaths: list[str], *, force: bool = False) -> None:
    """``git add -A`` exactly ``relpaths`` (relative to ``work``) into the private index
    (``force``: even where an ignore rule matches)."""
    if not relpaths:
        return
    lay.tracked = None  # the caller that keeps it up to date sets it again
    await run_git(
        ["add", "-A", *(["-f"] if force else []), "--pathspec-from-file=-", "--pathspec-file-nul"],
        cwd=lay.work,
        repo=lay.private_repo,
        stdin=b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in relpaths),
    )


async def stage(lay: Layout, tree: Path, relpaths: list[str] | None) -> None:
    """Record ``relpaths`` of ``tree`` (None: every file ``add -A`` takes) in the private
    index, tolerating a tree that changes meanwhile (a build, a watcher, an editor).

    ``git add`` dies when a file it listed is gone when it reads it ("unable to stat") or a
    path it was given matches nothing: then the paths are read once more here, each exactly
    once, and the index takes what was read (a vanished path is absent, as if deleted a
    moment earlier; a path that became a directory is absent too). Only file contents reach
    git from then on (``update-index --index-info``), so no second race is possible.
    """
    if relpaths is not None and not relpaths:
        return
    lay.tracked = None

    async def git(args: list[str], stdin: bytes | None = None, check: bool = True) -> GitResult:
        return await run_git(
            args,
            cwd=tree,
            repo=lay.private_repo_at(tree),
            stdin=stdin,
            check=check,
        )

    pathspec = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in relpaths or [])
    from_stdin = ["--pathspec-from-file=-", "--pathspec-file-nul"] if pathspec else []
    code, _, err = await git(["add", "-A", *from_stdin], pathspec or None, check=False)
    if code == 0:
        return
    why = err.decode("utf-8", "replace").strip().splitlines()[-1:]
    log.info("driveros: the workspace changed while it was copied (%s); reading it again", why)
    if relpaths is None:
        # Tracked (in the private index) and untracked-not-ignored files: what add -A takes.
        _, out, _ = await git(["ls-files", "-z", "--cached", "--others", "--exclude-standard"])
        relpaths = sorted(set(split_z(out)))
    # The reading thread writes into the scratch root: a cancellation waits for it, so the
    # cleanup that follows never races it.
    info = await thread_to_the_end(read_entries, lay.git_dir, tree, relpaths)
    await git(["update-index", "-z", "--index-info"], info)
    # Stat data for what was read, so later adds hash only edits (best effort).
    await git(["update-index", "-q", "--ignore-missing", "--refresh"], check=False)


def read_entries(git_dir: Path, tree: Path, relpaths: list[str]) -> bytes:
    """``update-index --index-info -z`` input for ``relpaths`` as they are now: each path
    read once (its blob written into ``git_dir``), or removed when it is gone or is no file
    (a directory, a fifo). A nested repository is left as the index has it."""
    removals: list[bytes] = []
    entries: list[bytes] = []
    for rel in relpaths:
        name = rel.rstrip("/").encode("utf-8", "surrogateescape")
        read = _read_entry(tree, rel.rstrip("/"))
        if read is None:
            if (tree / rel / ".git").exists():
                continue
            removals.append(b"0 " + b"0" * 40 + b"\t" + name + b"\0")
            continue
        mode, data = read
        sha = write_blob(git_dir, data)
        entries.append(b"%s %s\t%s\0" % (mode.encode(), sha.encode(), name))
    return b"".join(removals + entries)


def _read_entry(tree: Path, rel: str) -> tuple[str, bytes] | None:
    """(git mode, content) of the file or symlink ``tree/rel``, read once; None when it is
    neither now. Reached through :func:`open_parent`: a directory swapped for a link meanwhile
    cannot lead the read outside ``tree``."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        with open_parent(tree, rel) as (fd, name):
            st = os.lstat(name, dir_fd=fd)
            if stat.S_ISLNK(st.st_mode):
                return "120000", os.fsencode(os.readlink(name, dir_fd=fd))
            if not stat.S_ISREG(st.st_mode):
                return None
            with os.fdopen(os.open(name, flags, dir_fd=fd), "rb") as fh:
                st = os.fstat(fh.fileno())
                if not stat.S_ISREG(st.st_mode):
                    return None
                data = fh.read()
    except OSError:
        return None  # gone, or changed type, since it was listed: absent
    return ("100755" if st.st_mode & stat.S_IXUSR else "100644"), data


def write_blob(git_dir: Path, data: bytes) -> str:
    """Store ``data`` as a loose blob in ``git_dir`` (git's object format); its id."""
    sha = blob_sha(data)
    obj = git_dir / "objects" / sha[:2] / sha[2:]
    if not obj.exists():
        obj.parent.mkdir(exist_ok=True)
        tmp = obj.parent / f"tmp_obj_{os.urandom(6).hex()}"
        tmp.write_bytes(zlib.compress(b"blob %d\0" % len(data) + data))
        tmp.replace(obj)
    return sha
