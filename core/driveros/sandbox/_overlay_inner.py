"""Mounts one bounded tmpfs for everything a sandbox writes, lays a throwaway overlay over a
workspace on it, then becomes bubblewrap (stdlib only).

Never imported by driveros: :mod:`driveros.sandbox._oneshot` reads this file's text and runs
it as ``python -I -S -c SOURCE WORKSPACE SCRATCH BYTES DIRS BWRAP ARGS...`` on the host. It
enters a new user namespace (the caller's uid and gid mapped to themselves) with a new mount
namespace, makes every mount private and mounts one tmpfs of ``BYTES`` on ``SCRATCH`` (the
sandbox's private directory): in it, the directories ``DIRS`` (``:``-separated names) that
bubblewrap binds as HOME, TMPDIR, ``/tmp``, ``/var/tmp``, ``/run`` and ``/dev/shm``, so all of
them together hold at most ``BYTES`` (a command that fills them gets ENOSPC). Unless
``WORKSPACE`` is ``-``, an overlay on ``WORKSPACE`` whose lower layer is the workspace itself
and whose upper layer is on that tmpfs too, which bubblewrap binds as the sandbox's
workspace. Every write a command makes lands in the tmpfs and is gone with the namespace: the
user's tree is only read. Nothing of the host is changed (the mounts live only in the new
namespace).

On any failure it exits with :data:`FAILED` and one line on stderr, before bubblewrap runs.
"""

import ctypes
import os
import sys

FAILED = 125
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNS = 0x00020000
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_REC = 16384
_MS_PRIVATE = 1 << 18


def _fail(what: str, errno: int) -> None:
    sys.stderr.write(f"driveros overlay: {what}: {os.strerror(errno)}\n")
    sys.exit(FAILED)


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def main(argv: list[str]) -> None:
    workspace, scratch, size, dirs = argv[0], argv[1], int(argv[2]), argv[3]
    command = argv[4:]
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS) != 0:
        _fail("unshare", ctypes.get_errno())
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    except OSError as exc:
        _fail("the id maps", exc.errno or 0)

    def mount(source: str | None, target: str, kind: str | None, flags: int, data: str) -> None:
        found = libc.mount(
            source.encode() if source else None,
            target.encode(),
            kind.encode() if kind else None,
            flags,
            data.encode() if data else None,
        )
        if found != 0:
            _fail(f"mount {kind or 'private'} on {target}", ctypes.get_errno())

    mount(None, "/", None, _MS_REC | _MS_PRIVATE, "")
    mount("tmpfs", scratch, "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode=0700,size={size}")
    try:
        for name in dirs.split(":"):
            os.mkdir(f"{scratch}/{name}", 0o700)  # noqa: PTH102 - the stdlib minimum
    except OSError as exc:
        _fail(f"mkdir in {scratch}", exc.errno or 0)
    if workspace != "-":
        upper, work = f"{scratch}/upper", f"{scratch}/work"
        os.mkdir(upper, 0o700)  # noqa: PTH102
        os.mkdir(work, 0o700)  # noqa: PTH102
        # The overlay's root shows the upper directory's mode: the workspace's own.
        os.chmod(upper, os.stat(workspace).st_mode & 0o7777)  # noqa: PTH101, PTH116
        # The lower layer is the workspace itself (resolved before the overlay covers it).
        options = f"lowerdir={workspace},upperdir={upper},workdir={work},userxattr"
        mount("overlay", workspace, "overlay", _MS_NOSUID | _MS_NODEV, options)
    try:
        os.execv(command[0], command)  # noqa: S606 - bubblewrap, argv from driveros
    except OSError as exc:
        _fail(f"exec {command[0]}", exc.errno or 0)


if __name__ == "__main__":  # run with -c; never on import
    main(sys.argv[1:])
