"""Asking a human on the terminal (/dev/tty), never on stdin/stdout."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
from collections.abc import Sequence
from pathlib import Path

from driveros.approval._ask import AskApproval
from driveros.approval._types import Answer, FolderAccess, NoTerminalError, Question, Tier

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


class TtyAsker:
    """Asks on the terminal (/dev/tty), never on stdin/stdout.

    Construction fails fast with :class:`NoTerminalError` when the terminal cannot be opened,
    so a run without a terminal never waits for an answer. The terminal is opened
    non-blocking and the loop watches it, so asking never blocks the event loop and
    cancellation stops waiting. The whole command is shown with every control character
    escaped (:func:`display_command`). Answers: ``y`` allow once, ``a`` allow for this run,
    ``n`` (optionally followed by a reason, which the model sees) or anything else deny.
    """

    def __init__(self, *, tty_path: str | Path = "/dev/tty") -> None:
        self._tty = str(tty_path)
        os.close(_open_tty(self._tty))

    async def ask(self, question: Question) -> Answer:
        prompt = (
            f"\n{question.message()}\n"
            "Allow? [y]es once / [a]llow for this run / [n]o (optionally: n <reason>) > "
        )
        fd = _open_tty(self._tty)
        try:
            await _write_all(fd, prompt.encode())
            answer = await _read_line(fd)
        finally:
            os.close(fd)
        word, _, rest = answer.strip().partition(" ")
        match word.lower():
            case "y" | "yes":
                return Answer(choice="allow_once", by="tty")
            case "a" | "always" | "allow":
                return Answer(choice="allow_run", by="tty")
            case _:
                return Answer(choice="deny", by="tty", reason=rest.strip())


class InteractiveApproval(AskApproval):
    """``--approve interactive``: :class:`AskApproval` asking on the terminal."""

    def __init__(
        self,
        *,
        tty_path: str | Path = "/dev/tty",
        workspace: str | Path | None = None,
        tier: Tier | None = None,
        timeout: float | None = None,
        folders: Sequence[FolderAccess] = (),
    ) -> None:
        super().__init__(
            TtyAsker(tty_path=tty_path),
            workspace=workspace,
            tier=tier,
            timeout=timeout,
            folders=folders,
        )


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
