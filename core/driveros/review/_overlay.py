"""Copy-on-write scratch views: a kernel overlayfs over the user's workspace.

The user's repository is the overlay's lower layer (never written: the kernel copies a file up
into the run's own ``upper`` directory before the first write); the agent works in the merged
view. Starting costs one ``mount`` plus a baseline made of ``HEAD`` and the user's dirty files
(no checkout, no copy), and :func:`upper_candidates` finds what the run touched by walking
only the upper layer: time and disk proportional to the run's changes, not the repository.

Two drivers make the view: the kernel's overlayfs as root (strategy ``overlay``), and
``fuse-overlayfs`` for everyone else (strategy ``fuse-overlay``: a FUSE daemon running as the
user, mounted through the setuid ``fusermount3``). The probe picks one per process.
The strategy is chosen by ``$DRIVEROS_SCRATCH_STRATEGY`` (``auto``, ``overlay``,
``worktree``, ``copy``); see docs/scratch.md.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import functools
import logging
import os
import shutil
import stat
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from driveros._finish import thread_to_the_end
from driveros.config import SCRATCH_STRATEGY_VAR, switches
from driveros.state import mounts_under

log = logging.getLogger(__name__)

#: The environment variable that picks the strategy.
#: The variable that picks the strategy (named and read in driveros.config).
STRATEGY_VAR = SCRATCH_STRATEGY_VAR
STRATEGIES: tuple[str, ...] = ("auto", "overlay", "worktree", "copy")
#: What ``auto`` tries, in order: the overlay where this machine can mount one, else a worktree
#: (a git repository with a commit), else a copy.
AUTO_PREFERS: tuple[str, ...] = ("overlay", "worktree", "copy")

#: File systems a lower layer (the workspace) or an upper layer (the scratch root) may be on.
_LOWER_FS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs"})
_UPPER_FS = _LOWER_FS
#: Characters the overlay's mount options cannot carry unescaped.
_BAD_CHARS = frozenset(",:\\\n=")
_OPAQUE = ("trusted.overlay.opaque", "user.overlay.opaque", "user.fuseoverlayfs.opaque")
#: The strategies that are views (the kernel's overlay, fuse-overlayfs).
VIEW_STRATEGIES = frozenset({"overlay", "fuse-overlay"})
#: fuse-overlayfs's other whiteout forms: a file ``.wh.<name>`` hides ``<name>``, a file
#: ``.wh..wh..opq`` makes its directory opaque (what it writes where it cannot mknod).
_WH_PREFIX = ".wh."
_WH_OPAQUE = ".wh..wh..opq"
_REDIRECT = ("trusted.overlay.redirect", "user.overlay.redirect")


def strategy_from_env(environ: Mapping[str, str] | None = None) -> str:
    """The strategy ``$DRIVEROS_SCRATCH_STRATEGY`` asks for (default ``auto``)."""
    raw = switches(environ).scratch_strategy
    if not raw:
        return "auto"
    if raw not in STRATEGIES:
        log.warning("ignoring %s=%r: expected one of %s", STRATEGY_VAR, raw, ", ".join(STRATEGIES))
        return "auto"
    return raw


def _kernel_probe() -> str | None:
    try:
        with open("/proc/filesystems", encoding="utf-8") as fh:
            if not any(line.split()[-1:] == ["overlay"] for line in fh):
                return "the kernel has no overlay file system"
    except OSError as exc:
        return f"cannot read /proc/filesystems: {exc}"
    if shutil.which("mount") is None or shutil.which("umount") is None:
        return "no mount/umount command"
    return None


def _fuse_probe() -> str | None:
    if shutil.which("fuse-overlayfs") is None:
        return "not root, and no fuse-overlayfs command (Debian package fuse-overlayfs)"
    if shutil.which("fusermount3") is None and shutil.which("fusermount") is None:
        return "not root, and no fusermount3/fusermount command (Debian package fuse3)"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        why = "missing" if not Path("/dev/fuse").exists() else "not readable and writable"
        return f"not root, and /dev/fuse is {why} for this user"
    return None


@functools.cache
def view_driver() -> tuple[str, str | None]:
    """The view strategy this process would use (``overlay`` as root, else ``fuse-overlay``)
    and None when it can, else why not (probed once per process)."""
    if os.geteuid() == 0:
        return "overlay", _kernel_probe()
    return "fuse-overlay", _fuse_probe()


def overlay_probe() -> str | None:
    """None when this process can mount a view (kernel overlay or fuse-overlayfs), else why
    not (cached)."""
    return view_driver()[1]


#: Why the kernel (or fusermount) refused a mount for lack of privilege (root without
#: CAP_SYS_ADMIN, as in a container), learned at the first attempt: later runs do not try again.
_denied: list[str] = []
_DENIED_HINTS = ("permission denied", "not permitted", "must be superuser")


def _overlay_usable() -> str | None:
    return overlay_probe() or (_denied[0] if _denied else None)


def scratch_strategies() -> dict[str, str | None]:
    """Every strategy and None when usable on this machine, else why not."""
    driver, _ = view_driver()
    why = _overlay_usable()
    other = "fuse-overlay" if driver == "overlay" else "overlay"
    needs = "not root" if driver == "overlay" else "root"
    return {driver: why, other: f"only when {needs}", "worktree": None, "copy": None}


def fs_type(path: Path) -> str:
    """The file system type of the mount holding ``path`` (from /proc/self/mountinfo)."""
    best, kind = "", ""
    target = str(path)
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                fields = left.split(" ")
                if len(fields) < 5 or not right:
                    continue
                point = fields[4].replace("\\040", " ")
                inside = point == "/" or target == point or target.startswith(point + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, right.split()[0]
    except OSError:
        return ""
    return kind


def overlay_refusal(lower: Path, root: Path, *, repository: bool) -> str | None:
    """None when ``lower`` can be an overlay's lower layer with upper/work under ``root``.

    ``repository``: ``lower`` is a git repository's top level. Its ``.git`` must then be a
    directory: a ``.git`` file (a linked worktree's or a submodule's) points at the user's
    git directory by path, so git commands in the view would write the user's index and refs
    there instead of into the upper layer.
    """
    why = _overlay_usable()
    if why is not None:
        return why
    if repository:
        try:
            mode = (lower / ".git").lstat().st_mode
        except OSError as exc:
            return f"cannot read {lower / '.git'}: {exc.strerror}"
        if not stat.S_ISDIR(mode):
            return "the repository's .git is not a directory (a linked worktree or submodule)"
    for p in (lower, root):
        if _BAD_CHARS.intersection(str(p)):
            return f"the path {str(p)!r} holds a character mount options cannot carry"
    if lower == root or lower in root.parents or root in lower.parents:
        return "the scratch directory and the workspace overlap"
    kind = fs_type(lower)
    if kind not in _LOWER_FS:
        return f"the workspace is on {kind or 'an unknown file system'}"
    kind = fs_type(root)
    if kind not in _UPPER_FS:
        return f"the scratch directory is on {kind or 'an unknown file system'}"
    return None


async def _run(*argv: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        _, err = await proc.communicate()
    except BaseException:
        proc.kill()
        await asyncio.shield(proc.wait())
        raise
    return proc.returncode or 0, err.decode("utf-8", "replace").strip()


def _with_parent() -> tuple[str, ...]:
    """A command prefix that kills the command when this process (the thread starting it)
    dies (``setpriv --pdeathsig KILL``); empty without setpriv (util-linux)."""
    setpriv = shutil.which("setpriv")
    return (setpriv, "--pdeathsig", "KILL", "--") if setpriv else ()


@functools.cache
def _libc_mount() -> Any:
    """libc's mount(2), typed (looked up once per process)."""
    fn = ctypes.CDLL(None, use_errno=True).mount
    fn.argtypes = [
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_ulong,
        ctypes.c_char_p,
    ]
    fn.restype = ctypes.c_int
    return fn


def _mount_syscall(opts: str, merged: Path) -> tuple[int, str]:
    """``mount -t overlay overlay -o opts merged`` as one mount(2) call; (0, "") or (errno,
    the error). Blocking."""
    data = opts.encode("utf-8", "surrogateescape")
    if len(data) >= 4096:  # the kernel reads one page of options
        return 1, "the overlay's mount options are longer than a page"
    fn = _libc_mount()
    if fn(b"overlay", os.fsencode(merged), b"overlay", 0, data) == 0:
        return 0, ""
    code = ctypes.get_errno() or 1
    # Worded as mount(8) words it: a refused privilege reads "permission denied".
    why = "permission denied" if code in (errno.EPERM, errno.EACCES) else os.strerror(code)
    return code, f"mount: {merged}: {why}"


def _unsafe_dir(path: Path) -> str | None:
    """Why ``path`` must not be handed to ``mount`` (None when it is a real directory).

    Every component must be what it says: ``mount`` and the kernel follow symlinks, so a
    symlink planted at any of these paths (say, a scratch ``upper`` swapped for a link to the
    user's repository before a kept view is mounted again) would redirect the mount.
    """
    try:
        real = os.path.realpath(path, strict=True)
        mode = os.lstat(path).st_mode
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    if real != str(path) or not stat.S_ISDIR(mode):
        return f"{path} is not a plain directory (a symlink or another file type)"
    return None


def _layers_refusal(
    lower: Path, upper: Path, work: Path, merged: Path, hide: Path | None
) -> str | None:
    for p in (lower, upper, work, merged, *([hide] if hide is not None else [])):
        why = _unsafe_dir(p)
        if why is not None:
            return why
    if _BAD_CHARS.intersection(f"{lower}{upper}{work}{hide or ''}"):
        return "a layer's path holds a character mount options cannot carry"
    return None


async def mount_overlay(
    lower: Path,
    upper: Path,
    work: Path,
    merged: Path,
    driver: str = "overlay",
    hide: Path | None = None,
) -> str | None:
    """Mount the view (``driver``: ``overlay``, the kernel's, or ``fuse-overlay``); None on
    success, else the error. ``hide``: the hide layer (see :func:`hide_layer_base`), a lower
    layer above ``lower``. Each path must be a real directory (no symlink anywhere on it),
    checked right before mounting."""
    why = await asyncio.to_thread(_layers_refusal, lower, upper, work, merged, hide)
    if why is not None:
        return why
    lowers = f"{hide}:{lower}" if hide is not None else str(lower)
    opts = f"lowerdir={lowers},upperdir={upper},workdir={work}"
    if driver == "fuse-overlay":
        # Daemonizes once mounted (stdio to /dev/null); the daemon runs as this user and
        # exits when the view is unmounted (fusermount3 -u). Until then it dies with this
        # process (a mount made after its owner died would outlive any cleanup).
        code, err = await _run(*_with_parent(), "fuse-overlayfs", "-o", opts, str(merged))
    else:
        # The mount(2) call itself, from this process: no helper that a kill -9 could leave
        # running to mount after this process is gone. Waited for even when canceled.
        code, err = await thread_to_the_end(_mount_syscall, opts, merged)
    if code == 0:
        return None
    why = (err.splitlines() or [f"mount exited {code}"])[0].strip()
    if any(h in err.lower() for h in _DENIED_HINTS) and not _denied:
        who = "fuse-overlayfs could not" if driver == "fuse-overlay" else "the kernel refused to"
        _denied.append(f"{who} mount an overlay here ({why})")
    return why


def hide_layer_base(environ: Mapping[str, str] | None = None) -> Path | None:
    """A tmpfs directory this user may create the hide layer in (``$XDG_RUNTIME_DIR``, else
    ``/dev/shm``), or None. Making a whiteout there costs microseconds, against about half a
    millisecond of kernel time per inode on ext4 (thousands of ignored paths in a big
    repository). Blocking."""
    env = os.environ if environ is None else environ
    # /dev/shm is shared: the layer gets a fresh unguessable name, made 0700 (O_EXCL).
    for raw in (env.get("XDG_RUNTIME_DIR", ""), "/dev/shm"):  # noqa: S108
        base = Path(raw)
        if not raw or not base.is_absolute() or _BAD_CHARS.intersection(raw):
            continue
        usable = _unsafe_dir(base) is None and os.access(base, os.W_OK | os.X_OK)
        if usable and fs_type(base) == "tmpfs":
            return base
    return None


def hide_paths(layer: Path, rels: Iterable[str], lower: Path | None = None) -> list[str]:
    """Hide each of the lower layer's ``rels`` (a file or a whole directory) from the view: a
    whiteout (a 0/0 character device) in ``layer``, the hide layer (a lower layer above the
    user's workspace; overlayfs and fuse-overlayfs honour whiteouts in a lower layer), made
    before mounting. Linux >= 5.8 lets any user make one; where mknod is refused (an older
    kernel, not root) a ``.wh.<name>`` file is made instead, which fuse-overlayfs (the only
    driver used without root) reads as a whiteout. A directory made in ``layer`` on the way
    takes the owner (where this user may give it), mode and times of ``lower``'s (the view
    takes a directory's attributes from the top-most layer holding it; the times are set once
    every whiteout is made). The paths hidden: not one whose parent in ``lower`` is not a
    plain directory (the view cannot reach it through that) or is hidden whole already.
    Blocking; a path is looked at once (thousands in a big repository)."""
    top = str(layer)
    low = None if lower is None else str(lower)
    usable: dict[str, bool] = {}  # a directory of the layer (relative) -> it may hold one
    made: list[tuple[str, os.stat_result]] = []

    def parent_ok(rel: str) -> bool:
        known = usable.get(rel)
        if known is None:
            known = usable[rel] = _hide_dir(top, low, rel, made)
        return known

    hidden: list[str] = []
    for rel in rels:
        parts = rel.split("/")
        if not all(parent_ok("/".join(parts[:i])) for i in range(1, len(parts))):
            continue
        # One syscall per path where it can be: made at once, and one already there is kept.
        try:
            os.mknod(f"{top}/{rel}", stat.S_IFCHR | 0o600, os.makedev(0, 0))
        except FileExistsError:
            pass
        except PermissionError:
            marker = f"{top}/{'/'.join([*parts[:-1], _WH_PREFIX + parts[-1]])}"
            try:
                fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            except FileExistsError:
                pass
            else:
                os.close(fd)
        hidden.append(rel)
    for path, st in reversed(made):  # deepest first: a directory's times leave its parent's
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
    return hidden


def _hide_dir(top: str, low: str | None, rel: str, made: list[tuple[str, os.stat_result]]) -> bool:
    """Make the hide layer's directory ``rel`` (its parent is made) as ``low``'s; whether it
    is a directory that may hold a whiteout."""
    path = f"{top}/{rel}"
    try:
        st = None if low is None else os.lstat(f"{low}/{rel}")
    except (FileNotFoundError, NotADirectoryError):
        return False  # gone since it was listed (a build, a watcher): nothing to hide
    if st is not None and not stat.S_ISDIR(st.st_mode):
        return False
    # Plain strings, not Path objects: thousands of calls at a run's start.
    try:
        os.mkdir(path, 0o700)  # noqa: PTH102
    except FileExistsError:
        return stat.S_ISDIR(os.lstat(path).st_mode)  # else hidden whole already
    if st is not None:
        try:
            os.chown(path, st.st_uid, st.st_gid)
        except PermissionError:
            pass  # not root: the directory stays this user's, as the view's files are
        os.chmod(path, stat.S_IMODE(st.st_mode))  # noqa: PTH101
        made.append((path, st))
    return True


def hide_in_layer(layer: Path, rel: str, lower: Path | None = None) -> bool:
    """Hide one path (see :func:`hide_paths`); whether it is hidden."""
    return bool(hide_paths(layer, [rel], lower))


def to_hide(
    lower: Path, ignored: list[str], keep: list[str], reach: Collection[str] = ()
) -> list[str]:
    """What to hide of ``lower`` given its ignored paths (relative, a directory with or
    without a trailing ``/``): each one except a path of ``keep`` (the environments) or one
    inside it. An ignored directory holding a kept path, or that is or holds a path of
    ``reach`` (the workspace itself: it must exist in the view), is hidden entry by entry
    around it. Reads ``lower`` only for such a directory."""
    keeps = [k.strip("/") for k in keep if k.strip("/")]
    opens = [r.strip("/") for r in reach if r.strip("/")]
    out: list[str] = []
    for raw in ignored:
        rel = raw.rstrip("/")
        if not rel or any(rel == k or rel.startswith(k + "/") for k in keeps):
            continue
        if rel in opens or any(p.startswith(rel + "/") for p in (*keeps, *opens)):
            try:
                names = sorted(p.name for p in (lower / rel).iterdir())
            except OSError:
                continue
            out.extend(to_hide(lower, [f"{rel}/{n}" for n in names], keeps, opens))
        else:
            out.append(rel)
    return out


async def is_mounted(merged: Path) -> bool:
    """Whether a view is mounted at ``merged``."""
    return str(merged) in await asyncio.to_thread(mounts_under, merged)


def _xattr(path: str, names: tuple[str, ...]) -> bool:
    for name in names:
        try:
            os.getxattr(path, name, follow_symlinks=False)
            return True
        except OSError:
            continue
    return False


def upper_candidates(upper: Path, prefix: str, hidden: Collection[str] = ()) -> list[str]:
    """Paths (relative to the merged root) the run may have changed, from the upper layer.

    Files and symlinks are created or modified; a whiteout (a 0/0 character device, or
    fuse-overlayfs's ``.wh.<name>`` file) is a deletion of whatever was there (a file or a
    whole directory), except one at a path of ``hidden`` (a path the view hides: nothing the
    run did; a copy kept by an older version holds those whiteouts in its upper layer); an
    opaque (xattr, or a ``.wh..wh..opq`` file inside) or redirected directory is named whole
    (its lower contents are hidden or moved). ``.git`` is
    never named. Only the upper layer is walked: proportional to what the run wrote.
    """
    planted = frozenset(hidden)
    start = upper / prefix if prefix else upper
    out: list[str] = []
    if not start.is_dir():
        return out
    base = len(str(upper)) + 1
    stack = [str(start)]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            rel = entry.path[base:]
            if entry.name.lower().rstrip(". ") == ".git":
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                opaque = os.path.lexists(Path(entry.path, _WH_OPAQUE))
                if opaque or _xattr(entry.path, _OPAQUE) or _xattr(entry.path, _REDIRECT):
                    out.append(rel)
                else:
                    stack.append(entry.path)
            elif stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
                if rel not in planted:
                    out.append(rel)  # whiteout: a deletion
            elif entry.name.startswith(_WH_PREFIX) and entry.name != _WH_OPAQUE:
                # fuse-overlayfs's whiteout file: a deletion of the name it carries. The
                # file's own path is a candidate too (harmless: compared with the view).
                hid = rel[: len(rel) - len(entry.name)] + entry.name[len(_WH_PREFIX) :]
                if hid not in planted:
                    out.extend((hid, rel))
            else:
                out.append(rel)
    return sorted(set(out))
