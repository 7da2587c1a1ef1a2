"""The feed's warm pytest process: pytest's start-up paid once per sandbox, not per run.

Starting pytest costs seconds in a real environment (its ``pytest11`` plugins: hypothesis,
pytest-asyncio, ...), more than collecting or running the few test files an edit affects.
:class:`WarmPytest` keeps a fork server (:func:`server_code`, standard library only) running
in the feed's sandbox, under the project's own interpreter, with pytest and its plugins
imported; an incremental pytest run is then a small client run through ``sandbox.run``
exactly like the cold command (same timeout, output cap, kill, cwd and environment) that has
the server fork a child running the pytest script on the client's own stdin/stdout/stderr.

Whenever the warm process cannot serve (not started, still starting past a bound, refused
the request, died) the client exits :data:`UNAVAILABLE` having written nothing and the feed
runs the cold command; the server is then restarted for the next run. See docs/intel.md,
"The warm pytest process", and docs/security.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
import secrets
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from driveros._errors import SandboxError
from driveros.intel._config import CheckSpec
from driveros.intel._warm_wire import UNAVAILABLE
from driveros.sandbox import BackgroundProcess, Sandbox

__all__ = ["UNAVAILABLE", "WarmPytest", "server_code", "warm_parts"]

_log = logging.getLogger(__name__)

#: How long an incremental run waits for a server still importing (then: cold run).
_READY_WAIT = 60.0
#: Consecutive runs the warm process could not serve before the feed stops trying.
_MAX_FAILURES = 3
#: The modules the sandbox's one-file copy of the warm process is made of, in order.
_SERVER_PARTS = ("_warm_wire.py", "_warm_server.py")
#: Where the server module's import of the wire's names starts and ends.
_SHIPPING_MARKS = ("# -- not shipped", "# -- shipped")
_READY = re.compile(r"ready \d+")


@functools.cache
def server_code() -> bytes:
    """The warm process as the sandbox gets it: one standard-library file, ``w.py``, that is
    ``_warm_wire.py`` followed by ``_warm_server.py`` without its ``from __future__`` line
    and its block from ``# -- not shipped`` to ``# -- shipped`` (its import of the wire's
    names, which are the file's own there)."""
    wire, server = (Path(__file__).with_name(n).read_text("utf-8") for n in _SERVER_PARTS)
    lines = server.splitlines(keepends=True)
    marks = [i for i, line in enumerate(lines) if line.startswith(_SHIPPING_MARKS)]
    if len(marks) != 2:
        raise RuntimeError("_warm_server.py: the '# -- not shipped' block is not marked")
    kept = lines[: marks[0]] + lines[marks[1] + 1 :]
    kept = [line for line in kept if line != "from __future__ import annotations\n"]
    code = wire + "\n\n" + "".join(kept)
    compile(code, "w.py", "exec")  # a broken copy fails here, not in the sandbox
    return code.encode("utf-8")


@runtime_checkable
class _ProcessHost(Protocol):
    """A sandbox that can start long-lived processes (LocalSandbox and DockerSandbox)."""

    async def start_process(
        self, command: str, *, cwd: str = ".", env: dict[str, str] | None = None
    ) -> BackgroundProcess: ...


@dataclass(frozen=True)
class _Parts:
    assignments: tuple[str, ...]
    script: str
    args: tuple[str, ...]


def warm_parts(command: str) -> _Parts | None:
    """``NAME=VALUE ... SCRIPT ARG ...`` split up (None: any other shape of command)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    assignments: list[str] = []
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        assignments.append(words.pop(0))
    if not words or words[0].startswith("-"):
        return None
    return _Parts(tuple(assignments), words[0], tuple(words[1:]))


def interpreter_of(head: str) -> tuple[str | None, str | None]:
    """From a script's first lines: ``(interpreter path, None)``, ``(None, name to look up
    on PATH)`` for ``#!/usr/bin/env NAME``, or ``(None, None)``: not a Python script."""
    lines = head.split("\n")
    first = lines[0].strip()
    if not first.startswith("#!"):
        return None, None
    words = first[2:].split()
    if len(words) == 1 and words[0].startswith("/"):
        if words[0] in ("/bin/sh", "/usr/bin/sh") and len(lines) > 1:
            # pip's form for a long interpreter path: '''exec' /path/python "$0" "$@"
            second = lines[1].strip()
            if second.startswith("'''exec' "):
                try:
                    rest = shlex.split(second[len("'''exec' ") :])
                except ValueError:
                    return None, None
                if len(rest) == 3 and rest[0].startswith("/") and rest[1:] == ["$0", "$@"]:
                    return rest[0], None
            return None, None
        return (words[0], None) if "python" in words[0].rsplit("/", 1)[-1] else (None, None)
    if len(words) == 2 and words[0] == "/usr/bin/env" and "python" in words[1]:
        return None, words[1]
    return None, None


class WarmPytest:
    """The warm pytest process of one feed (at most one server at a time).

    ``cache_dir`` is the feed's cache directory as the sandbox's shell sees it (it may hold
    ``${TMPDIR:-/tmp}``); the server's socket and script live in a directory of their own
    below it. ``renice`` is the feed's prefix that makes its commands background work.
    """

    def __init__(self, sandbox: Sandbox, cache_dir: str, *, renice: str) -> None:
        self._sandbox = sandbox
        self._dir = f"{cache_dir}/warm-{secrets.token_hex(6)}"
        self._renice = renice
        self._proc: BackgroundProcess | None = None
        self._key: tuple[str, ...] | None = None
        self._python: dict[tuple[str, str], tuple[str, str] | None] = {}
        self._said = ""
        self._ready = False
        self._failures = 0
        self._disabled: str | None = None
        self._lock = asyncio.Lock()
        #: The server's process id as the sandbox sees it, once it is ready.
        self.pid: int | None = None
        #: Runs the warm process served (for tests and the benchmark).
        self.served_runs = 0

    @property
    def disabled(self) -> str | None:
        """Why this feed no longer uses a warm process (None: it does)."""
        return self._disabled

    @property
    def directory(self) -> str:
        """The server's own directory (socket, script) as the sandbox's shell writes it."""
        return self._dir

    @property
    def running(self) -> bool:
        """Whether a server is started and has not ended."""
        return self._proc is not None and self._proc.running

    async def start(self, spec: CheckSpec, roots: tuple[str, ...]) -> bool:
        """Have a server for ``spec``'s command running (or starting); a no-op when one is,
        or when no warm process can be had (then every run is cold). True: it was launched
        just now (still importing: not worth waiting for in this same snapshot)."""
        if self._disabled is not None or not isinstance(self._sandbox, _ProcessHost):
            return False
        parts = warm_parts(spec.command)
        if parts is None:
            return False
        async with self._lock:
            found = await self._interpreter(parts.script, spec.cwd)
            if found is None:
                return False
            script, python = found
            key = (python, script, parts.script, spec.cwd, " ".join(parts.assignments), *roots)
            if self._key == key and self._proc is not None and self._proc.running:
                return False
            await self._stop()
            self._key = key
            try:
                await self._launch(python, script, parts, spec.cwd, roots)
            except SandboxError as exc:
                _log.info("warm pytest process not started: %s", exc)
                self._disabled = f"could not start: {exc}"
                return False
            return True

    async def _interpreter(self, script: str, cwd: str) -> tuple[str, str] | None:
        """``(the script as the shell finds it, its interpreter)``: what ``python SCRIPT``
        runs when the shell runs ``SCRIPT`` (None: not a Python script we can tell)."""
        if (script, cwd) in self._python:
            return self._python[(script, cwd)]
        found: tuple[str, str] | None = None
        try:
            head = await self._sandbox.run(
                f"p=$(command -v {shlex.quote(script)}) && printf '%s\\n' \"$p\" && "
                'head -c 512 -- "$p"',
                cwd=cwd,
            )
            path, _, text = head.stdout.partition("\n")
            python, name = interpreter_of(text) if head.exit_code == 0 else (None, None)
            if name is not None:
                where = await self._sandbox.run(f"command -v {shlex.quote(name)}", cwd=cwd)
                named = where.stdout.strip()
                python = named if where.exit_code == 0 and named.startswith("/") else None
            if python is not None and path:
                found = (path, python)
        except SandboxError:
            found = None
        self._python[(script, cwd)] = found
        return found

    async def _launch(
        self, python: str, script: str, parts: _Parts, cwd: str, roots: tuple[str, ...]
    ) -> None:
        assert isinstance(self._sandbox, _ProcessHost)
        code = await asyncio.to_thread(server_code)
        put = await self._sandbox.run(
            f'umask 077 && mkdir -p "{self._dir}" && cat > "{self._dir}/w.py"',
            stdin=code,
            timeout=30,
        )
        if put.exit_code != 0:
            raise SandboxError(f"could not write the server: {put.stderr.strip()[:200]}")
        env = " ".join(shlex.quote(a) for a in parts.assignments)
        words = " ".join(shlex.quote(w) for w in (script, *roots))
        command = (
            f'{self._renice}{env} exec {shlex.quote(python)} "{self._dir}/w.py" '
            f'serve "{self._dir}" {words}'
        )
        self._said, self._ready = "", False
        self._proc = await self._sandbox.start_process(command, cwd=cwd)

    async def command(self, spec: CheckSpec, extra: str, *, wait: bool = True) -> str | None:
        """The client command running ``spec.command`` plus ``extra`` (quoted arguments) in
        the warm process; None when there is none to use (run the cold command). ``wait``:
        wait (bounded) for a server still starting, else only take one that is ready."""
        parts = warm_parts(spec.command)
        if self._disabled is not None or parts is None or self._key is None:
            return None
        python, script, *serving = self._key
        if serving[:3] != [parts.script, spec.cwd, " ".join(parts.assignments)]:
            return None
        if not await self._wait_ready(_READY_WAIT if wait else 0.0):
            return None
        env = " ".join(shlex.quote(a) for a in parts.assignments)
        args = " ".join(shlex.quote(a) for a in (script, *parts.args))
        return (
            f'{env} {shlex.quote(python)} -I -S "{self._dir}/w.py" client "{self._dir}" '
            f"{args} {extra}".strip()
        )

    async def _wait_ready(self, bound: float) -> bool:
        proc = self._proc
        if proc is None:
            return False
        loop = asyncio.get_running_loop()
        deadline = loop.time() + bound
        while not self._ready:
            out = await proc.read(wait=min(1.0, max(0.0, deadline - loop.time())))
            self._said += out.stdout
            said = self._said.splitlines()  # a plugin may print on import: look for the line
            ready = [line for line in said if _READY.fullmatch(line)]
            if ready and self._said.endswith("\n"):
                self._ready = True
                self.pid = int(ready[0].split()[1])
            elif any(line.startswith("nowarm ") for line in said):
                self._give_up(_reason(self._said))
                await self._stop()
                return False
            elif not out.running:  # died while starting: counts as a run it could not serve
                self._fail(_reason(self._said + out.stderr))
                await self._stop()
                self._key = None
                return False
            elif loop.time() >= deadline:
                if bound > 0:  # waited in full once: never make a run wait that long again
                    self._give_up(f"not ready after {bound:g}s")
                    await self._stop()
                return False
        return proc.running

    def _give_up(self, reason: str) -> None:
        self._disabled = reason
        _log.info("no warm pytest process: %s", reason)

    def _fail(self, reason: str) -> None:
        self._failures += 1
        if self._failures >= _MAX_FAILURES:
            self._give_up(f"could not serve {self._failures} runs in a row ({reason})")

    async def served(self, exit_code: int, timed_out: bool) -> bool:
        """Whether a warm run's result stands; False: run the cold command (the server is
        stopped, to be started afresh by the next :meth:`start`)."""
        if exit_code != UNAVAILABLE or timed_out:
            self._failures = 0
            self.served_runs += 1
            return True
        self._fail("refused or gone")
        async with self._lock:
            await self._stop()
            self._key = None
            self._python.clear()  # the script or its interpreter may be what changed
        return False

    async def _stop(self) -> None:
        proc, self._proc = self._proc, None
        self._ready = False
        if proc is not None:
            with contextlib.suppress(SandboxError, OSError):
                await proc.stop(grace=1.0)

    async def aclose(self) -> None:
        """Stop the server (the sandbox's own close stops it too)."""
        async with self._lock:
            await self._stop()
            self._key = None


def _reason(said: str) -> str:
    for line in said.splitlines():
        if line.startswith("nowarm "):
            return line.removeprefix("nowarm ")[:300]
    return "the server ended: " + said.strip()[-300:] if said.strip() else "the server ended"
