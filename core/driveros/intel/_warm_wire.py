"""The warm pytest process: a fork server that has pytest and its plugins imported already.

Standard library only: the sandbox gets one file, ``w.py``, made of this module (the wire: the
request, its descriptors, the status, and the client) followed by ``_warm_server.py`` (the
server's lifecycle), and the project's own interpreter (the one in the pytest script's
shebang) runs it there; :func:`driveros.intel._warm.server_code` builds it. driveros itself
imports only :data:`UNAVAILABLE` from here.

``python w.py serve SOCKDIR SCRIPT ROOT...`` (cwd: where the cold pytest command runs) imports
pytest and the ``pytest11`` entry-point plugins, refuses (prints ``nowarm <why>``, exits 0)
when any module it imported lives in the workspace (a ``ROOT``) outside an environment
directory (``site-packages``), or when a thread is running, then listens on ``SOCKDIR/s`` and
prints ``ready PID``. The project's modules and conftest.py files are never imported here.

``python -I -S w.py client SOCKDIR SCRIPT ARG...`` (run through the sandbox exactly like the
cold command) connects, passes its stdin/stdout/stderr (SCM_RIGHTS), argv, cwd and
environment; the server checks that the request is the one it can serve (the same script,
cwd and environment as its own, nothing it imported changed on disk) and forks: the child
takes the client's descriptors and environment and runs the pytest script as ``python SCRIPT
ARG...`` would, in its own process group. The client exits with the child's status (or dies
by the same signal). Client gone -> the child's group is killed. Anything the server cannot
serve -> the client exits ``UNAVAILABLE`` having written nothing, and the caller runs the
cold command.
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import struct

#: The client's exit code when the warm process cannot serve (pytest itself exits 0-5).
UNAVAILABLE = 75
#: Set by the shell per process: not part of what makes two environments equal.
VOLATILE = frozenset({"PWD", "OLDPWD", "SHLVL", "_"})
#: The most bytes a request may take (its environment is most of it).
MAX_REQUEST = 8 * 1024 * 1024
#: Frames a request's size and the child's wait status.
HEADER = struct.Struct("!I")


def env_key(env: dict[str, str]) -> dict[str, str]:
    """``env`` as two environments are compared: without the shell's per-process names."""
    return {k: v for k, v in env.items() if k not in VOLATILE}


class Request:
    """What a client asks for (checked field by field: the client is not trusted)."""

    def __init__(self, raw: object) -> None:
        if not isinstance(raw, dict) or raw.get("v") != 1:
            raise ValueError("bad request")
        script, args, cwd, env = raw.get("script"), raw.get("args"), raw.get("cwd"), raw.get("env")
        if not isinstance(script, str) or not isinstance(cwd, str):
            raise ValueError("bad request")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError("bad arguments")
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise ValueError("bad environment")
        self.script: str = script
        self.args: list[str] = args
        self.cwd: str = cwd
        self.env: dict[str, str] = env


def receive(conn: socket.socket) -> tuple[Request, list[int]]:
    """The request and the descriptors it came with (closed here if it is not well formed)."""
    fds = array.array("i")
    data, ancdata, _flags, _addr = conn.recvmsg(65536, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    received = list(fds)
    try:
        return _read_request(conn, data), received
    except (OSError, ValueError):
        for fd in received:
            os.close(fd)
        raise


def _read_request(conn: socket.socket, data: bytes) -> Request:
    if len(data) < HEADER.size:
        raise ValueError("short request")
    (size,) = HEADER.unpack(data[: HEADER.size])
    if size > MAX_REQUEST:
        raise ValueError("request too large")
    body = bytearray(data[HEADER.size :])
    while len(body) < size:
        chunk = conn.recv(min(65536, size - len(body)))
        if not chunk:
            raise ValueError("short request")
        body += chunk
    return Request(json.loads(bytes(body)))


# -- the client ---------------------------------------------------------------------------


def client(sockdir: str, script: str, args: list[str]) -> int:
    request = json.dumps(
        {"v": 1, "script": script, "args": args, "cwd": os.getcwd(), "env": dict(os.environ)}
    ).encode()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.chdir(sockdir)  # a short address: a socket path is limited to about 100 bytes
        conn.connect("s")
        payload = HEADER.pack(len(request)) + request
        fds = array.array("i", [0, 1, 2])
        sent = conn.sendmsg(
            [payload[:65536]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds.tobytes())]
        )
        conn.sendall(payload[sent:])
        if conn.recv(1) != b"S":
            return UNAVAILABLE
    except OSError:
        return UNAVAILABLE
    status = b""
    while len(status) < HEADER.size:
        try:
            chunk = conn.recv(HEADER.size - len(status))
        except OSError:
            chunk = b""
        if not chunk:
            return UNAVAILABLE if not status else 1
        status += chunk
    (value,) = HEADER.unpack(status)
    if os.WIFSIGNALED(value):
        signum = os.WTERMSIG(value)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    return os.WEXITSTATUS(value) if os.WIFEXITED(value) else 1
