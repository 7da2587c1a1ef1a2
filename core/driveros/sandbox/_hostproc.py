"""One host command: its own process group, piped and capped output, killed whole."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from pathlib import Path

from driveros._errors import SandboxError
from driveros.sandbox._contained import ContainedHost, ContainedProcess
from driveros.sandbox._output import CappedBuffer, pump
from driveros.sandbox._protocol import CommandResult
from driveros.sandbox._watchdog import Watchdog, kill_group, start_group

#: How long output may keep flowing after the command's shell exited (background writers).
DRAIN_GRACE = 0.2
#: Exit code reported for a command killed by its timeout (as coreutils ``timeout``).
TIMEOUT_EXIT = 124


def spawn_error(argv: list[str], exc: OSError) -> SandboxError:
    """A process that could not start (shell missing, command too long, no memory)."""
    return SandboxError(
        f"could not start {argv[0]!r}: {exc.strerror or exc}", errno=exc.errno, argv0=argv[0]
    )


def shell_exit_code(returncode: int) -> int:
    """Python's ``-N`` for death by signal N, reported the shell's way: ``128 + N``."""
    return 128 - returncode if returncode < 0 else returncode


async def _feed(stdin: asyncio.StreamWriter | None, data: bytes) -> None:
    assert stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
    stdin.close()


async def run_host_command(
    argv: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float | None,
    stdin: bytes | None,
    cap: int,
    watchdog: Watchdog,
    host: ContainedHost | None = None,
) -> CommandResult:
    """Run ``argv`` in a new session; the whole group is gone when this returns or raises.

    Background processes the command left behind are killed when it finishes (long-lived
    processes belong in the process host). On timeout the group is killed and the result
    says ``timed_out``; on cancellation the group is killed and CancelledError re-raised.
    With ``host``, the command runs in that local sandbox (docs/sandbox.md), else on the host
    (only benchmarks and driveros' own helpers do that).
    """
    started = time.monotonic()
    proc: asyncio.subprocess.Process | ContainedProcess
    if host is not None:
        try:
            proc = await host.spawn(argv, cwd=cwd, env=env, stdin_pipe=stdin is not None)
        except OSError as exc:
            raise spawn_error(argv, exc) from exc
        contained = proc

        def kill() -> None:
            contained.kill_group()

        def done() -> None:
            contained.finish()
    else:
        try:
            proc = await start_group(
                watchdog,
                *argv,
                cwd=cwd,
                env=dict(env),
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            raise spawn_error(argv, exc) from exc
        pgid = proc.pid

        def kill() -> None:
            kill_group(pgid)

        def done() -> None:
            watchdog.untrack_group(pgid)

    assert proc.stdout is not None and proc.stderr is not None
    out, err = CappedBuffer(cap), CappedBuffer(cap)
    readers = [
        asyncio.ensure_future(pump(proc.stdout, out)),
        asyncio.ensure_future(pump(proc.stderr, err)),
    ]
    feeder = asyncio.ensure_future(_feed(proc.stdin, stdin)) if stdin is not None else None
    timed_out = False
    try:
        try:
            async with asyncio.timeout(timeout):
                await proc.wait()
        except TimeoutError:
            timed_out = True
        kill()
        await proc.wait()
        _, pending = await asyncio.wait(readers, timeout=DRAIN_GRACE)
        for task in pending:
            task.cancel()
    except BaseException:
        kill()
        for task in readers:
            task.cancel()
        await proc.wait()
        raise
    finally:
        if feeder is not None:
            feeder.cancel()
        await asyncio.gather(*readers, *([feeder] if feeder else []), return_exceptions=True)
        done()
    assert proc.returncode is not None
    return CommandResult(
        stdout=out.text(),
        stderr=err.text(),
        exit_code=TIMEOUT_EXIT if timed_out else shell_exit_code(proc.returncode),
        duration_ms=(time.monotonic() - started) * 1000,
        timed_out=timed_out,
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        output_cap=cap,
    )
