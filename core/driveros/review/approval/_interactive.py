"""Asking a human on the terminal (/dev/tty), never on stdin/stdout."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
from pathlib import Path

from driveros.review.approval._policies import policy_decision
from driveros.review.approval._types import ApprovalRequest, Decision, NoTerminalError

_MAX_ANSWER = 4096


def _open_tty(path: str) -> int:
    try:
        # O_NONBLOCK: neither opening nor any later read or write can block the loop.
        return os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError as exc:
        raise NoTerminalError(
            f"interactive approval needs a terminal, but {path} cannot be opened "
            f"({exc.strerror or exc}); use --approve policy or --approve never",
            tty=path,
        ) from exc


class InteractiveApproval:
    """Auto-allows what :class:`PolicyApproval` allows and asks on the terminal for the rest.

    Construction fails fast with :class:`NoTerminalError` when the terminal cannot be opened,
    so a run without a terminal never waits for an answer. Prompts are serialized; the terminal
    is opened non-blocking and the loop watches it, so asking never blocks the event loop and
    cancellation stops waiting.
    Answers: ``y`` allow once, ``a`` allow this exact request for the rest of the session,
    ``n`` (optionally followed by a reason, which the model sees) deny.
    """

    name = "interactive"

    def __init__(
        self, *, tty_path: str | Path = "/dev/tty", workspace: str | Path | None = None
    ) -> None:
        self._tty = str(tty_path)
        self._workspace = str(workspace) if workspace is not None else None
        os.close(_open_tty(self._tty))
        self._lock = asyncio.Lock()
        self._always: set[tuple[str, str]] = set()

    async def decide(self, request: ApprovalRequest) -> Decision:
        auto = policy_decision(request, workspace=self._workspace)
        if auto.allowed:
            return auto
        key = (request.tool, request.command or repr(sorted(request.arguments.items())))
        if key in self._always:
            return Decision(allowed=True, reason="approved earlier for this session", asked=False)
        async with self._lock:
            answer = await self._ask(
                f"\ndriveros wants to {request.describe()}\n  ({auto.reason})\n"
                "Allow? [y]es / [a]lways / [n]o (optionally: n <reason>) > "
            )
        word, _, rest = answer.strip().partition(" ")
        word = word.lower()
        if word in ("y", "yes"):
            return Decision(allowed=True, reason="approved by the user", asked=True)
        if word in ("a", "always"):
            self._always.add(key)
            return Decision(allowed=True, reason="approved by the user (always)", asked=True)
        reason = "denied by the user" + (f": {rest.strip()}" if rest.strip() else "")
        return Decision(allowed=False, reason=reason, asked=True)

    async def _ask(self, prompt: str) -> str:
        fd = _open_tty(self._tty)
        try:
            await _write_all(fd, prompt.encode())
            return await _read_line(fd)
        finally:
            os.close(fd)


def _wake(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


async def _wait(fd: int, *, write: bool) -> None:
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    if write:
        loop.add_writer(fd, _wake, ready)
    else:
        loop.add_reader(fd, _wake, ready)
    try:
        await ready
    finally:
        if write:
            loop.remove_writer(fd)
        else:
            loop.remove_reader(fd)


async def _write_all(fd: int, data: bytes) -> None:
    """Write to a non-blocking fd, waiting (without blocking the loop) when it is full."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            await _wait(fd, write=True)


async def _read_line(fd: int) -> str:
    """One line from a non-blocking fd; "" on end of file (Ctrl-D)."""
    buf = bytearray()
    # A terminal in raw mode sends "\r" for Enter; a cooked one "\n".
    while b"\n" not in buf and b"\r" not in buf and len(buf) < _MAX_ANSWER:
        await _wait(fd, write=False)
        try:
            chunk = os.read(fd, 1024)
        except BlockingIOError:
            continue
        except OSError as exc:
            if exc.errno == errno.EIO:  # terminal hung up
                break
            raise
        if not chunk:
            break
        buf.extend(chunk)
    with contextlib.suppress(UnicodeDecodeError):
        return buf.replace(b"\r", b"\n").split(b"\n", 1)[0].decode()
    return ""
