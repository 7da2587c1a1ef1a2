"""``driveros-lsp --tcp``: serve exactly one client, which proves it holds this server's token.

A connection is *admitted* when its first message is an ``initialize`` request whose
``initializationOptions.driverosToken`` equals the token (compared in constant time). Until
then nothing it sends reaches the server: it is not answered (but a refused ``initialize``,
which gets an error naming what is missing), it cannot see a run, an approval question or an
edit. A connection that sends anything else, a wrong or no token, nothing within
:data:`ADMIT_TIMEOUT_S`, or more than :data:`FIRST_MESSAGE_LIMIT` bytes is closed, and the
server goes on waiting. The first admitted connection is the client: the listener is closed at
once (later connections are refused by the kernel), and the server serves it until it leaves,
then exits. At most :data:`MAX_WAITING` connections wait at once (one more closes the
oldest, so idle connections cannot lock the client out). Without a token
(``--tcp-no-token``) the first accepted connection is the client.

The token is random (:func:`new_token_file` writes it to a ``0600`` file in the state
directory, removed when the server ends) or read from a ``0600`` file of the user's
(:func:`read_token_file`). The token is removed from the ``initialize`` the server reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import re
import secrets
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from driveros_lsp._serve import serve

if TYPE_CHECKING:
    from driveros_lsp._server import DriverosLanguageServer

logger = logging.getLogger(__name__)

#: The ``initializationOptions`` key that carries the token.
TOKEN_OPTION = "driverosToken"  # noqa: S105 (a key name, not a secret)
#: Seconds a connection has to send its ``initialize``.
ADMIT_TIMEOUT_S = 10.0
#: The largest first message read (an editor's ``initialize`` is some tens of KiB).
FIRST_MESSAGE_LIMIT = 4 * 1024 * 1024
#: Connections waiting to be admitted at once; one more closes the oldest.
MAX_WAITING = 8
#: The JSON-RPC error code of a refused ``initialize`` (server-defined range).
REFUSED_CODE = -32001
_TOKEN_FILE_LIMIT = 4096
_MIN_TOKEN = 16
_CONTENT_LENGTH = re.compile(rb"Content-Length:\s*(\d+)\s*", re.IGNORECASE)


class TokenFileError(Exception):
    """A token file that cannot be used (missing, a link, readable by others, empty)."""


def new_token_file(directory: Path) -> tuple[Path, str]:
    """Make a random token and write it to a new ``0600`` file in ``directory`` (made ``0700``
    if missing); (the file, the token). Blocking."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    path = directory / f"lsp-tcp-{os.getpid()}-{secrets.token_hex(4)}.token"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    try:
        os.write(fd, token.encode("ascii") + b"\n")
    finally:
        os.close(fd)
    return path, token


def read_token_file(path: Path) -> str:
    """The token in ``path``: a regular file (not a link) of this user's that no one else may
    read or write (mode ``0600`` or stricter). Raises :class:`TokenFileError`. Blocking."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise TokenFileError(f"cannot open the token file {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TokenFileError(f"the token file {path} is not a regular file")
        if st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise TokenFileError(
                f"the token file {path} must be yours and private (chmod 600 {path})"
            )
        raw = os.read(fd, _TOKEN_FILE_LIMIT + 1)
    finally:
        os.close(fd)
    token = raw.decode("utf-8", "replace").strip()
    if len(raw) > _TOKEN_FILE_LIMIT or len(token) < _MIN_TOKEN or not token.isprintable():
        raise TokenFileError(
            f"the token file {path} must hold one printable token of {_MIN_TOKEN} to "
            f"{_TOKEN_FILE_LIMIT} characters"
        )
    return token


class _Refused(Exception):
    """A connection that did not prove it holds the token (the reason, for the log)."""


class _Replayed:
    """pygls' async reader over ``reader`` that first gives back ``first`` (whole frames)."""

    def __init__(self, first: bytes, reader: asyncio.StreamReader) -> None:
        self._first = first
        self._reader = reader

    async def readline(self) -> bytes:
        if self._first:
            end = self._first.find(b"\n") + 1 or len(self._first)
            line, self._first = self._first[:end], self._first[end:]
            return line
        return await self._reader.readline()

    async def readexactly(self, n: int) -> bytes:
        if self._first:
            part, self._first = self._first[:n], self._first[n:]
            return part + (await self._reader.readexactly(n - len(part)) if len(part) < n else b"")
        return await self._reader.readexactly(n)


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def _first_message(reader: asyncio.StreamReader) -> dict[str, Any]:
    length: int | None = None
    for _ in range(16):  # header lines
        line = await reader.readline()
        if not line:
            raise _Refused("closed before initialize")
        if not line.strip():
            break
        if match := _CONTENT_LENGTH.fullmatch(line):
            length = int(match.group(1))
    else:
        raise _Refused("too many header lines")
    if length is None or length > FIRST_MESSAGE_LIMIT:
        raise _Refused("no Content-Length" if length is None else "first message too large")
    body = await reader.readexactly(length)
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: nested past the parser's depth
        raise _Refused("first message is not JSON") from None
    if not isinstance(message, dict):
        raise _Refused("first message is not an object")
    return message


async def _admit(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, token: str | None
) -> bytes:
    """The first frame of an admitted connection (the ``initialize`` without the token, or
    nothing without a token); raises :class:`_Refused` after answering a refused
    ``initialize``."""
    if token is None:
        return b""
    message = await _first_message(reader)
    params = message.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    given = options.pop(TOKEN_OPTION, None) if isinstance(options, dict) else None
    if message.get("method") != "initialize" or "id" not in message:
        raise _Refused(f"first message is not initialize: {str(message.get('method'))[:40]!r}")
    if isinstance(given, str) and hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), token.encode()
    ):
        return frame(message)
    error = {
        "code": REFUSED_CODE,
        "message": f"driveros-lsp --tcp: initialize must carry this server's token as "
        f"initializationOptions.{TOKEN_OPTION} (the server printed the token file's path; "
        "docs/protocol.md, 'Starting the server')",
    }
    answer = {"jsonrpc": "2.0", "id": message["id"], "error": error}
    if isinstance(answer["id"], int | str):
        writer.write(frame(answer))
        with contextlib.suppress(ConnectionError):
            await writer.drain()
    raise _Refused("wrong token" if given is not None else "no token")


def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()


async def serve_tcp(
    server: DriverosLanguageServer, host: str, port: int, *, token: str | None
) -> None:
    """Listen on ``host:port``, serve the first connection admitted (see the module
    docstring) until it leaves, then return. Prints ``driveros-lsp listening on HOST:PORT``
    to stderr once listening."""
    loop = asyncio.get_running_loop()
    chosen: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]]
    chosen = loop.create_future()
    waiting: dict[asyncio.StreamWriter, None] = {}  # oldest first

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if chosen.done():
            _close(writer)
            return
        if len(waiting) >= MAX_WAITING:  # the oldest makes room: idle ones cannot lock out
            _close(next(iter(waiting)))
        waiting[writer] = None
        try:
            first = await asyncio.wait_for(_admit(reader, writer, token), ADMIT_TIMEOUT_S)
        except (_Refused, TimeoutError, ConnectionError, asyncio.IncompleteReadError) as exc:
            logger.warning("driveros-lsp: refused a TCP connection: %s", exc or "timed out")
            _close(writer)
            return
        except ValueError as exc:  # a header line over the reader's limit
            logger.warning("driveros-lsp: refused a TCP connection: %s", exc)
            _close(writer)
            return
        finally:
            waiting.pop(writer, None)
        if chosen.done():
            _close(writer)
            return
        chosen.set_result((reader, writer, first))

    tcp = await asyncio.start_server(on_client, host, port)
    host_, port_ = tcp.sockets[0].getsockname()[:2]
    # stderr, whatever the log level: a launcher reads the port from here (with --tcp HOST:0)
    sys.stderr.write(f"driveros-lsp listening on {host_}:{port_}\n")
    sys.stderr.flush()
    try:
        reader, writer, first = await chosen
    finally:
        tcp.close()  # one client: later connections are refused
        for other in list(waiting):
            _close(other)
    try:
        await serve(server, _Replayed(first, reader) if first else reader, writer)
    finally:
        _close(writer)
