"""Exec in the sandbox container as a :class:`Channel` (the docker SDK, off the event loop).

Every exec runs a small wrapper: it starts the command with ``setsid`` as a new process
group that records its id in ``/tmp/.driveros/<token>``; when the command ends the wrapper
kills whatever it left in its group and exits with the command's status. Signals (timeout,
cancel, interrupt) reach the whole group through a second exec that reads that file:
docker has no "kill exec" call.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

from driveros._errors import SandboxError
from driveros.sandbox._channel import STDERR, STDOUT

# Foreground on purpose: an asynchronous list (``&``) would start the command with SIGINT
# ignored, and a shell cannot un-ignore an inherited SIGINT (sessions need it).
_WRAPPER = """t=$1; shift
mkdir -p /tmp/.driveros 2>/dev/null
setsid /bin/sh -c 'echo $$ > "/tmp/.driveros/$0"; exec "$@"' "$t" "$@"
s=$?
p=$(cat "/tmp/.driveros/$t" 2>/dev/null)
[ -n "$p" ] && kill -KILL -"$p" 2>/dev/null
rm -f "/tmp/.driveros/$t"
exit "$s"
"""

_SIGNALLER = """f=/tmp/.driveros/$1; i=0
while [ ! -s "$f" ] && [ $i -lt 25 ]; do sleep 0.02; i=$((i+1)); done
[ -s "$f" ] && kill -"$2" -"$(cat "$f")" 2>/dev/null
exit 0
"""


def _raw_socket(sock: Any) -> socket.socket:
    inner = getattr(sock, "_sock", sock)
    assert isinstance(inner, socket.socket)
    return inner


class DockerChannel:
    """One exec in a running container, with stdin attached and output demultiplexed."""

    def __init__(
        self, api: Any, container_id: str, exec_id: str, token: str, user: str, sock: Any
    ) -> None:
        self._api = api
        self._container_id = container_id
        self._exec_id = exec_id
        self._token = token
        self._user = user
        self._sock = sock
        self._raw = _raw_socket(sock)
        self._queue: asyncio.Queue[tuple[int, bytes] | None] = asyncio.Queue()
        self._ended = asyncio.Event()
        self._closed = False
        self._exit_code: int | None = None
        self._writing = threading.Lock()
        loop = asyncio.get_running_loop()
        self._thread = threading.Thread(
            target=self._pump, args=(loop,), name="driveros-docker-exec", daemon=True
        )
        self._thread.start()

    @classmethod
    async def start(
        cls,
        api: Any,
        container_id: str,
        argv: list[str],
        *,
        workdir: str,
        env: Mapping[str, str],
        user: str,
    ) -> DockerChannel:
        token = secrets.token_hex(8)

        def create() -> tuple[str, Any]:
            exec_id = api.exec_create(
                container_id,
                ["/bin/sh", "-c", _WRAPPER, "sh", token, *argv],
                stdin=True,
                stdout=True,
                stderr=True,
                tty=False,
                environment=[f"{k}={v}" for k, v in env.items()],
                workdir=workdir,
                user=user,
            )["Id"]
            return exec_id, api.exec_start(exec_id, socket=True)

        try:
            exec_id, sock = await asyncio.to_thread(create)
        except Exception as exc:
            raise SandboxError(f"docker exec failed: {exc}", container=container_id) from exc
        return cls(api, container_id, exec_id, token, user, sock)

    def _pump(self, loop: asyncio.AbstractEventLoop) -> None:
        from docker.utils.socket import frames_iter

        try:
            for stream, data in frames_iter(self._sock, tty=False):  # type: ignore[no-untyped-call]
                if data:
                    tag = STDERR if stream == 2 else STDOUT
                    loop.call_soon_threadsafe(self._queue.put_nowait, (tag, bytes(data)))
        except (OSError, ValueError):
            pass  # the socket was shut down by aclose()
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(self._finish)

    def _finish(self) -> None:
        self._queue.put_nowait(None)
        self._ended.set()

    def _send(self, data: bytes) -> None:
        # Whole writes, one at a time: two sendall threads at once (or one whose caller was
        # cancelled, which goes on) would interleave their bytes on the socket.
        with self._writing:
            self._raw.sendall(data)

    async def write(self, data: bytes) -> None:
        await asyncio.to_thread(self._send, data)

    async def close_stdin(self) -> None:
        with contextlib.suppress(OSError):
            await asyncio.to_thread(self._raw.shutdown, socket.SHUT_WR)

    async def read(self) -> tuple[int, bytes] | None:
        item = await self._queue.get()
        if item is None:
            self._queue.put_nowait(None)
        return item

    async def signal(self, signum: int) -> None:
        if self._ended.is_set() or self._closed:
            return
        await signal_exec(self._api, self._container_id, self._token, signum, self._user)

    async def wait(self) -> int:
        await self._ended.wait()
        if self._exit_code is None:
            try:
                self._exit_code = await asyncio.to_thread(self._inspect_exit)
            except Exception as exc:  # the container went away under the command
                raise SandboxError(
                    f"lost the command's exit status: {exc}", container=self._container_id
                ) from exc
        return self._exit_code

    def _inspect_exit(self) -> int:
        # The stream can end a moment before the daemon records the exit; poll briefly.
        for _ in range(300):
            info = self._api.exec_inspect(self._exec_id)
            code = info.get("ExitCode")
            if not info.get("Running") and code is not None:
                return int(code)
            time.sleep(0.02)
        return -1

    async def aclose(self) -> None:
        if self._closed:
            return
        if not self._ended.is_set():
            with contextlib.suppress(Exception):
                await signal_exec(self._api, self._container_id, self._token, 9, self._user)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    await self._ended.wait()
        self._closed = True
        with contextlib.suppress(OSError):
            self._raw.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._sock.close()


async def signal_exec(api: Any, container_id: str, token: str, signum: int, user: str) -> None:
    """Send ``signum`` to the process group of the exec started with ``token``."""

    def run() -> None:
        exec_id = api.exec_create(
            container_id,
            ["/bin/sh", "-c", _SIGNALLER, "sh", token, str(int(signum))],
            stdout=True,
            stderr=True,
            user=user,
        )["Id"]
        api.exec_start(exec_id)

    with contextlib.suppress(Exception):  # the container may be gone: nothing left to signal
        await asyncio.to_thread(run)
