"""Stateful shell sessions: one long-lived ``sh`` whose cwd and exports persist.

Framing: each command travels to the shell octal-escaped (``printf %b``) and runs under
``eval`` in a shell function with its own stdin, so no quoting in it can swallow what
follows. After it the shell prints ``__DRV_<token> <status> <pwd>\\0`` on stdout and
``__DRV_<token>\\0`` on stderr; the token is random per command, so output that is binary,
lacks a final newline or mimics a marker cannot end a command early. Output before the
marker is the command's.

Interrupts send SIGINT to the session's process group; the shell traps it, abandons the
rest of the command (exit code 130) and survives. A command that outlives its timeout and
the SIGINT grace (it ignores SIGINT) is killed with the whole shell; the next command then
starts a fresh shell in the last known cwd (exports are lost, and the timed-out result
says so).
"""

from __future__ import annotations

import asyncio
import secrets
import signal
import time
from collections.abc import Awaitable, Callable, Mapping

from driveros.sandbox._channel import STDOUT, Channel
from driveros.sandbox._env import check_command
from driveros.sandbox._hostproc import TIMEOUT_EXIT
from driveros.sandbox._output import CappedBuffer
from driveros.sandbox._protocol import (
    DEFAULT_OUTPUT_CAP,
    CommandResult,
    PolicyError,
    SandboxClosedError,
)

#: Seconds a command gets after SIGINT before the shell is killed.
INTERRUPT_GRACE = 1.0
_SAFE = frozenset(
    b'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-+=.,:/@#$&*()[]{};<>|!?~^"`'
)

#: Sent once to every session shell. A command runs inside ``__drv_run`` so that SIGINT
#: (the trap's ``return``) abandons the rest of it, as ^C does at a prompt, while the shell
#: and its cwd/exports survive. Outside a command the trap does nothing.
_PRELUDE = (
    b'__drv_run() { __drv_busy=1; __drv_c=$1; shift; command eval "$__drv_c"; }\n'
    b"trap '[ \"${__drv_busy:-}\" = 1 ] && { __drv_busy=; return 130; }; :' INT\n"
)

#: Opens the shell for a session in a workspace-relative cwd.
ShellOpener = Callable[[str], Awaitable[Channel]]
#: Maps the shell's ``$PWD`` back to a workspace-relative path (None: outside).
PwdMapper = Callable[[str], str | None]


def shell_bytes(data: bytes) -> str:
    """``data`` as a single-quoted ``printf %b`` argument that reproduces it exactly."""
    out = []
    for byte in data:
        out.append(chr(byte) if byte in _SAFE else f"\\0{byte:03o}")
    return "'" + "".join(out) + "'"


class _Framer:
    """Splits one stream at the end marker, keeping the command's part under a cap."""

    def __init__(self, marker: bytes, cap: int) -> None:
        self.marker = marker
        self.sink = CappedBuffer(cap)
        self._pending = bytearray()
        self.trailer: bytes | None = None  # bytes after the marker, up to the NUL

    def feed(self, data: bytes) -> None:
        if self.trailer is not None:
            return
        self._pending += data
        at = self._pending.find(self.marker)
        if at < 0:
            keep = len(self.marker) + 4200  # room for "<status> <pwd>\0" straddling chunks
            if len(self._pending) > keep:
                self.sink.write(bytes(self._pending[:-keep]))
                del self._pending[:-keep]
            return
        end = self._pending.find(b"\x00", at + len(self.marker))
        if end < 0:
            return
        self.sink.write(bytes(self._pending[:at]))
        self.trailer = bytes(self._pending[at + len(self.marker) : end])
        self._pending.clear()

    def flush(self) -> None:
        self.sink.write(bytes(self._pending))
        self._pending.clear()


class ShellSession:
    """A persistent shell in the sandbox; ``run()`` one command at a time."""

    def __init__(
        self,
        opener: ShellOpener,
        pwd_to_rel: PwdMapper,
        *,
        cwd: str = ".",
        default_timeout: float | None = None,
        output_cap: int = DEFAULT_OUTPUT_CAP,
    ) -> None:
        self._opener = opener
        self._pwd_to_rel = pwd_to_rel
        self._cwd = cwd
        self.default_timeout = default_timeout
        self.output_cap = output_cap
        self._channel: Channel | None = None
        self._lock = asyncio.Lock()
        self._closed = False

    @property
    def cwd(self) -> str:
        """The workspace-relative working directory after the last command."""
        return self._cwd

    async def _ensure(self) -> Channel:
        if self._closed:
            raise SandboxClosedError("this shell session was closed")
        if self._channel is None:
            self._channel = await self._opener(self._cwd)
            await self._channel.write(_PRELUDE)
        return self._channel

    async def run(
        self,
        command: str,
        *,
        timeout: float | None = None,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run ``command`` in the session; ``env`` is exported and persists like ``export``."""
        check_command(command)
        async with self._lock:
            channel = await self._ensure()
            return await self._run(channel, command, timeout, stdin, env)

    async def _run(
        self,
        channel: Channel,
        command: str,
        timeout: float | None,
        stdin: bytes | None,
        env: Mapping[str, str] | None,
    ) -> CommandResult:
        started = time.monotonic()
        token = secrets.token_hex(12).encode()
        out = _Framer(b"__DRV_" + token + b" ", self.output_cap)
        err = _Framer(b"__DRV_" + token, self.output_cap)
        script = [self._exports(env)]
        source = "/dev/null"
        if stdin is not None:
            script.append(
                '[ -n "$__drv_tmp" ] || __drv_tmp=$(mktemp -d) || exit 97\n'
                f'printf %b {shell_bytes(stdin)} > "$__drv_tmp/in"\n'
            )
            source = '"$__drv_tmp/in"'
        script.append(
            f'__drv_run "$(printf %b {shell_bytes(command.encode())})" < {source}\n'
            "__drv_s=$?; __drv_busy=\n"
            f'printf \'%s %d %s\\000\' __DRV_{token.decode()} "$__drv_s" "$PWD"\n'
            f"printf '%s\\000' __DRV_{token.decode()} >&2\n"
        )
        await channel.write("".join(script).encode())
        timed_out = False
        note = ""
        try:
            try:
                async with asyncio.timeout(self.default_timeout if timeout is None else timeout):
                    await self._collect(channel, out, err)
            except TimeoutError:
                timed_out = True
                await channel.signal(signal.SIGINT)
                try:
                    async with asyncio.timeout(INTERRUPT_GRACE):
                        await self._collect(channel, out, err)
                except TimeoutError:
                    note = await self._kill_shell()
        except BaseException:
            await self._kill_shell()
            raise
        if out.trailer is None and not note:
            # The shell itself ended (``exit`` in the command): report its status.
            out.flush()
            err.flush()
            code = await channel.wait()
            await self._kill_shell()
            return self._result(out, err, code, started, timed_out, "")
        status, _, pwd = (out.trailer or b"").decode("utf-8", "replace").partition(" ")
        rel = self._pwd_to_rel(pwd) if pwd else None
        if rel is not None:
            self._cwd = rel
        code = TIMEOUT_EXIT if timed_out else int(status or 0)
        return self._result(out, err, code, started, timed_out, note)

    def _result(
        self, out: _Framer, err: _Framer, code: int, started: float, timed_out: bool, note: str
    ) -> CommandResult:
        return CommandResult(
            stdout=out.sink.text(),
            stderr=err.sink.text() + note,
            exit_code=code,
            duration_ms=(time.monotonic() - started) * 1000,
            timed_out=timed_out,
            stdout_truncated=out.sink.truncated,
            stderr_truncated=err.sink.truncated,
            output_cap=self.output_cap,
        )

    @staticmethod
    async def _collect(channel: Channel, out: _Framer, err: _Framer) -> None:
        while out.trailer is None or err.trailer is None:
            item = await channel.read()
            if item is None:
                return
            tag, data = item
            (out if tag == STDOUT else err).feed(data)

    @staticmethod
    def _exports(env: Mapping[str, str] | None) -> str:
        lines = []
        for key, value in (env or {}).items():
            if not key.replace("_", "a").isalnum() or key[0].isdigit():
                raise PolicyError(f"invalid environment variable name {key!r}")
            lines.append(f'export {key}="$(printf %b {shell_bytes(value.encode())})"\n')
        return "".join(lines)

    async def _kill_shell(self) -> str:
        channel, self._channel = self._channel, None
        if channel is not None:
            await channel.aclose()
        return (
            "\n[driveros: the session shell was killed; the next command starts a fresh "
            f"shell in {self._cwd!r} and earlier exports are lost]\n"
        )

    async def interrupt(self) -> None:
        """Send SIGINT to the running command (the shell survives it)."""
        if self._channel is not None:
            await self._channel.signal(signal.SIGINT)

    async def aclose(self) -> None:
        """End the shell (its scratch files removed) and everything it started."""
        if self._closed:
            return
        self._closed = True
        channel, self._channel = self._channel, None
        if channel is None:
            return
        try:
            await channel.write(b'[ -n "$__drv_tmp" ] && rm -rf "$__drv_tmp"\nexit 0\n')
            await channel.close_stdin()
            async with asyncio.timeout(INTERRUPT_GRACE):
                await channel.wait()
        except (TimeoutError, OSError):
            pass
        finally:
            await channel.aclose()
