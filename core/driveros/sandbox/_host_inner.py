"""The process host that runs inside the local tier's bubblewrap sandbox (stdlib only).

Never imported by driveros: :mod:`driveros.sandbox._contained` reads this file's text and runs
it as ``python -I -S -c SOURCE FD`` inside the sandbox, where ``FD`` is one end of a unix
stream socket. Frames from the outside are a 4-byte big-endian length and a JSON object; a
``spawn`` frame carries the command's stdin, stdout and stderr as SCM_RIGHTS descriptors:

- ``{"op": "spawn", "id": N, "argv": [...], "cwd": "...", "env": {...}}`` starts the command
  in a new session with those descriptors; the answer is ``{"id": N, "pid": P}`` or
  ``{"id": N, "error": "...", "errno": E}``, later ``{"id": N, "exit": CODE}`` (Python's
  convention: ``-S`` for death by signal S);
- ``{"op": "kill", "id": N, "sig": S}`` signals the command's whole process group.

Answers are JSON lines. When the outside closes its end, every group is killed and the host
exits (and with it, through bubblewrap, the whole PID namespace).
"""

import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys

_FDS = 3


def _send(sock: socket.socket, obj: dict) -> None:  # type: ignore[type-arg]
    sock.sendall(json.dumps(obj).encode() + b"\n")


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


def _read_frame(sock: socket.socket) -> tuple[dict, list[int]]:  # type: ignore[type-arg]
    space = socket.CMSG_SPACE(_FDS * 4)
    head, ancdata, _flags, _addr = sock.recvmsg(4, space)
    fds: list[int] = []
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(data) - len(data) % 4
            fds.extend(struct.unpack(f"{usable // 4}i", data[:usable]))
    if not head:
        raise EOFError
    head += _recv_exact(sock, 4 - len(head))
    (size,) = struct.unpack(">I", head)
    return json.loads(_recv_exact(sock, size)), fds


def _spawn(request: dict, fds: list[int]) -> subprocess.Popen:  # type: ignore[type-arg]
    return subprocess.Popen(
        request["argv"],
        stdin=fds[0],
        stdout=fds[1],
        stderr=fds[2],
        cwd=request["cwd"],
        env=request["env"],
        start_new_session=True,
        close_fds=True,
    )


def _undumpable() -> None:
    """PR_SET_DUMPABLE 0: the commands (same uid, same namespaces) cannot ptrace this host,
    read its ``/proc/<pid>/fd`` or take its socket to forge answers. Commands it starts are
    dumpable again after their exec."""
    try:
        import ctypes  # only here: it may be missing

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    except (ImportError, OSError, AttributeError):
        pass


def main() -> None:
    _undumpable()
    sock = socket.socket(fileno=int(sys.argv[1]))
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _s, _f: None)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    groups: dict[int, int] = {}  # id -> pid (the pgid of its session)
    running: dict[int, tuple[int, subprocess.Popen]] = {}  # type: ignore[type-arg]
    _send(sock, {"ready": os.getpid()})
    try:
        while True:
            ready, _, _ = select.select([sock.fileno(), wake_r], [], [])
            if wake_r in ready:
                while True:
                    try:
                        if not os.read(wake_r, 512):
                            break
                    except BlockingIOError:
                        break
                while running:
                    try:
                        pid, status = os.waitpid(-1, os.WNOHANG)
                    except ChildProcessError:
                        break
                    if pid == 0:
                        break
                    if pid in running:
                        ident, proc = running.pop(pid)
                        proc.returncode = os.waitstatus_to_exitcode(status)
                        _send(sock, {"id": ident, "exit": proc.returncode})
            if sock.fileno() in ready:
                request, fds = _read_frame(sock)
                try:
                    _handle(sock, request, fds, groups, running)
                finally:
                    for fd in fds:
                        os.close(fd)
    except (EOFError, ConnectionError):
        pass
    finally:
        for pgid in groups.values():
            try:
                os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass


def _handle(
    sock: socket.socket,
    request: dict,  # type: ignore[type-arg]
    fds: list[int],
    groups: dict[int, int],
    running: dict[int, tuple[int, subprocess.Popen]],  # type: ignore[type-arg]
) -> None:
    ident = request["id"]
    if request["op"] == "kill":
        pgid = groups.get(ident)
        if pgid is not None:
            try:
                os.killpg(pgid, request["sig"])
            except OSError:
                pass
        return
    if request["op"] == "forget":
        groups.pop(ident, None)
        return
    if len(fds) != _FDS:
        _send(sock, {"id": ident, "error": "no stdio descriptors", "errno": 0})
        return
    try:
        proc = _spawn(request, fds)
    except OSError as exc:
        _send(sock, {"id": ident, "error": exc.strerror or str(exc), "errno": exc.errno or 0})
        return
    groups[ident] = proc.pid
    running[proc.pid] = (ident, proc)
    _send(sock, {"id": ident, "pid": proc.pid})


if __name__ == "__main__":
    main()
