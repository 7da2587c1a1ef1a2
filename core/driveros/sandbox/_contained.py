"""The local tier's one long-lived bubblewrap sandbox and the process host inside it.

:class:`ContainedHost` starts ``bwrap ... -- python -I -S -c <_host_inner.py> FD`` once per
sandbox; each command is then a fork/exec by that host, in the namespaces already made. The
outer side makes the command's pipes and hands their far ends over the unix socket
(SCM_RIGHTS), so output capping, timeouts and streaming stay what they are for any process:
:class:`ContainedProcess` has the shape of ``asyncio.subprocess.Process`` that
:mod:`._hostproc` and :mod:`._channel` use, and signals go to the command's whole group
through the host (its pids are those of the sandbox's PID namespace).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import select
import signal
import socket
import struct
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

from driveros.sandbox._bwrap import FIX_INSTALL, FIX_USERNS
from driveros.sandbox._protocol import LocalSandboxUnavailableError
from driveros.sandbox._watchdog import Watchdog, kill_group, start_group

log = logging.getLogger(__name__)

#: The in-sandbox host's program (stdlib only), passed with ``-c``.
_HOST_SOURCE = Path(__file__).with_name("_host_inner.py")
#: The in-sandbox host's interpreter: ours, symlinks resolved (its prefix is bound).
_INTERPRETER = os.path.realpath(sys.executable)
#: How long the sandbox may take to come up.
START_TIMEOUT = 20.0
#: The longest answer line the host sends (its answers are small JSON objects).
MAX_ANSWER = 64 * 1024
#: Exit code reported for a command whose host went away (killed with the sandbox).
HOST_GONE = -signal.SIGKILL


class ContainedProcess:
    """One command run by the in-sandbox host: pipes on this side, an exit code from the host."""

    def __init__(self, host: ContainedHost, ident: int) -> None:
        self._host = host
        self.ident = ident
        self.pid = 0  # in the sandbox's PID namespace
        self.returncode: int | None = None
        self.stdin: asyncio.StreamWriter | None = None
        self.stdout: asyncio.StreamReader | None = None
        self.stderr: asyncio.StreamReader | None = None
        self._transports: list[asyncio.BaseTransport] = []
        loop = asyncio.get_running_loop()
        self._started: asyncio.Future[int] = loop.create_future()
        self._exited: asyncio.Future[int] = loop.create_future()

    async def wait(self) -> int:
        """The exit code, Python's way (``-N`` for death by signal N)."""
        code = await asyncio.shield(self._exited)
        self.returncode = code
        return code

    def signal_group(self, signum: int) -> None:
        """Signal the command's whole process group (gone already is fine)."""
        self._host.send({"op": "kill", "id": self.ident, "sig": int(signum)})

    def kill_group(self) -> None:
        self.signal_group(signal.SIGKILL)

    def finish(self) -> None:
        """Close this side's pipes; the host forgets the group (killed already)."""
        for transport in self._transports:
            transport.close()
        self._host.send({"op": "forget", "id": self.ident})


class ContainedHost:
    """The sandbox: a bubblewrap process, its host and the socket between them."""

    def __init__(
        self, proc: asyncio.subprocess.Process, sock: socket.socket, watchdog: Watchdog
    ) -> None:
        self._proc = proc
        self._sock = sock
        self._watchdog = watchdog
        self._buffer = b""
        self._ids = 0
        self._children: dict[int, ContainedProcess] = {}
        self._gone = False
        self._stderr = b""
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().add_reader(sock.fileno(), self._readable)
        self._stderr_pump = asyncio.ensure_future(self._read_stderr())

    @classmethod
    async def start(cls, argv: list[str], *, watchdog: Watchdog) -> ContainedHost:
        """Start ``argv`` (bubblewrap's arguments up to ``--``) with the host inside; raises
        :class:`LocalSandboxUnavailableError` when it does not come up."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        source = _HOST_SOURCE.read_text(encoding="utf-8")
        interpreter = _INTERPRETER
        full = [*argv, "--", interpreter, "-I", "-S", "-c", source, str(theirs.fileno())]
        try:
            proc = await start_group(
                watchdog,
                *full,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                pass_fds=[theirs.fileno()],
                env={},
            )
        except asyncio.CancelledError:
            ours.close()
            raise
        except OSError as exc:
            ours.close()
            raise LocalSandboxUnavailableError(
                f"the local sandbox could not start bubblewrap ({exc.strerror or exc}): "
                f"{FIX_INSTALL}; commands are refused, never run on the host"
            ) from exc
        finally:
            theirs.close()
        ours.setblocking(False)
        host = cls(proc, ours, watchdog)
        try:
            async with asyncio.timeout(START_TIMEOUT):
                await host._ready
        except BaseException as exc:
            await host.aclose()
            if isinstance(exc, asyncio.CancelledError):
                raise
            said = host._stderr.decode("utf-8", "replace").strip().splitlines()
            cause = said[-1] if said else "it exited at once"
            raise LocalSandboxUnavailableError(
                f"the local sandbox did not start ({cause}): {FIX_USERNS}; commands are "
                "refused, never run on the host (`driveros doctor` checks the local sandbox)"
            ) from (exc if isinstance(exc, Exception) else None)
        return host

    async def _read_stderr(self) -> None:
        stream = self._proc.stderr
        assert stream is not None
        while chunk := await stream.read(4096):
            self._stderr = (self._stderr + chunk)[-4096:]
        await self._proc.wait()
        self._host_gone()

    @property
    def alive(self) -> bool:
        return not self._gone

    # -- the socket ---------------------------------------------------------------------

    def send(self, message: Mapping[str, object], fds: list[int] | None = None) -> None:
        """Send one frame (blocking only while the socket buffer is full)."""
        if self._gone:
            return
        body = json.dumps(message).encode()
        frame = struct.pack(">I", len(body)) + body
        ancillary = (
            [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))]
            if fds
            else []
        )
        try:
            sent = self._sendmsg([frame], ancillary)
            while sent < len(frame):
                sent += self._sendmsg([frame[sent:]], [])
        except OSError:
            self._host_gone()

    def _sendmsg(self, data: list[bytes], ancillary: list[tuple[int, int, bytes]]) -> int:
        while True:
            try:
                return self._sock.sendmsg(data, ancillary)
            except BlockingIOError:
                select.select([], [self._sock], [], 1.0)

    def _readable(self) -> None:
        try:
            chunk = self._sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._host_gone()
            return
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        if len(self._buffer) > MAX_ANSWER:  # no host answer is this long: not the host
            log.warning("the local sandbox's host sent an oversized answer; closing it")
            self._host_gone()
            return
        for line in lines:
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                message = None
            if not isinstance(message, dict):
                log.warning("the local sandbox's host sent an unreadable answer; ignored")
                continue
            self._answer(message)

    def _answer(self, message: dict[str, object]) -> None:
        if "ready" in message:
            if not self._ready.done():
                self._ready.set_result(None)
            return
        ident = message.get("id")
        child = self._children.get(ident) if isinstance(ident, int) else None
        if child is None:
            return
        if "pid" in message and isinstance(message["pid"], int):
            child.pid = message["pid"]
            if not child._started.done():
                child._started.set_result(child.pid)
        elif "error" in message:
            errno = message.get("errno")
            exc = OSError(errno if isinstance(errno, int) else 0, str(message["error"]))
            if not child._started.done():
                child._started.set_exception(exc)
            del self._children[child.ident]
        elif "exit" in message and isinstance(message["exit"], int):
            if not child._exited.done():
                child._exited.set_result(message["exit"])
            del self._children[child.ident]

    def _host_gone(self) -> None:
        if self._gone:
            return
        self._gone = True
        with contextlib.suppress(ValueError, OSError):
            asyncio.get_running_loop().remove_reader(self._sock.fileno())
        if not self._ready.done():
            self._ready.set_exception(
                LocalSandboxUnavailableError("the local sandbox exited before it was ready")
            )
        for child in self._children.values():
            if not child._started.done():
                child._started.set_exception(OSError(0, "the local sandbox exited"))
            if not child._exited.done():
                child._exited.set_result(HOST_GONE)
        self._children.clear()

    # -- commands -----------------------------------------------------------------------

    async def spawn(
        self, argv: list[str], *, cwd: Path, env: Mapping[str, str], stdin_pipe: bool
    ) -> ContainedProcess:
        """Start ``argv`` in the sandbox with piped stdout/stderr (and stdin when
        ``stdin_pipe``, else /dev/null); raises OSError when it cannot start."""
        if self._gone:
            raise OSError(0, "the local sandbox exited")
        loop = asyncio.get_running_loop()
        self._ids += 1
        child = ContainedProcess(self, self._ids)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        if stdin_pipe:
            in_r, in_w = os.pipe2(os.O_CLOEXEC)
        else:
            in_r, in_w = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC), -1
        # This side's ends as files from here on: a transport closes its file, and on an
        # error every file is closed (closing one twice is harmless).
        ours = [os.fdopen(out_r, "rb", buffering=0), os.fdopen(err_r, "rb", buffering=0)]
        if in_w >= 0:
            ours.append(os.fdopen(in_w, "wb", buffering=0))
        try:
            self._children[child.ident] = child
            message = {"op": "spawn", "id": child.ident, "argv": argv, "cwd": str(cwd)}
            self.send({**message, "env": dict(env)}, [in_r, out_w, err_w])
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        try:
            child.stdout = await _reader(loop, ours[0], child)
            child.stderr = await _reader(loop, ours[1], child)
            if in_w >= 0:
                child.stdin = await _writer(loop, ours[2], child)
            await child._started
        except BaseException:
            child.kill_group()
            child.finish()
            for file in ours:
                file.close()
            raise
        return child

    async def aclose(self) -> None:
        """Kill the sandbox and everything in it; idempotent."""
        self._host_gone()
        with contextlib.suppress(OSError):
            self._sock.close()
        if self._proc.returncode is None:  # once reaped, its number may be another's
            kill_group(self._proc.pid)
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
        await self._proc.wait()
        # The watchdog must never kill this group later: the pid is free for reuse now (with
        # 32768 pids, soon), and a new group by that number would be someone else's.
        self._watchdog.untrack_group(self._proc.pid)
        await asyncio.gather(self._stderr_pump, return_exceptions=True)
        if self._stderr:
            log.debug("local sandbox stderr: %s", self._stderr.decode("utf-8", "replace"))


async def _reader(
    loop: asyncio.AbstractEventLoop, pipe: BinaryIO, child: ContainedProcess
) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=2**16, loop=loop)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe
    )
    child._transports.append(transport)
    return reader


async def _writer(
    loop: asyncio.AbstractEventLoop, pipe: BinaryIO, child: ContainedProcess
) -> asyncio.StreamWriter:
    protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop), loop=loop)
    transport, _ = await loop.connect_write_pipe(lambda: protocol, pipe)
    child._transports.append(transport)
    return asyncio.StreamWriter(transport, protocol, None, loop)
