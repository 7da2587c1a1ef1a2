"""Sandbox overheads, side by side as ratios (never pass/fail).

- per command, ``python3 -c pass``: the contained local tier (LocalSandbox.run, one
  bubblewrap per sandbox with a process host inside) vs a bare asyncio subprocess vs the old
  uncontained path (run_host_command on the host) vs a new bubblewrap per command; a local
  shell session command;
- the local tier's first command (start: bubblewrap and its host, then one command);
- docker: exec in the long-lived container vs `docker run` per command;
- start-up (start, one command, aclose) per tier: local, docker runc, docker runsc.

Docker rows are skipped, with the reason, when no daemon or image is available.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench._results import Row, ratio, report
from driveros.sandbox import (
    DEFAULT_IMAGE,
    DEFAULT_OUTPUT_CAP,
    DockerSandbox,
    LocalSandbox,
    SandboxError,
    probe_local_sandbox,
)
from driveros.sandbox._bwrap import Layout, bwrap_argv, interpreter_dirs
from driveros.sandbox._hostproc import run_host_command

LOCAL_RUNS = 60
DOCKER_EXECS = 15
DOCKER_RUNS = 4


async def timed(fn: Callable[[], Awaitable[object]], repeat: int) -> float:
    """Median seconds of ``repeat`` calls (one warm-up call first)."""
    await fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


#: What this run measured, reported into bench/RESULTS.md at the end.
ROWS: list[Row] = []
#: The section the next rows belong to, and its baseline's label and seconds.
SECTION = {"name": "", "base": "", "seconds": 0.0}


def row(label: str, seconds: float, baseline: float | None = None) -> None:
    shown = f"{seconds / baseline:7.3f}x" if baseline else "   base "
    print(f"  {label:<46} {seconds * 1000:9.2f} ms  {shown}")
    if baseline is None:
        SECTION["base"], SECTION["seconds"] = label, seconds
        return
    where = " (`make bench ARGS=sandbox`)" if not ROWS else ""
    ROWS.append(
        Row(
            benchmark=f"{SECTION['name']}: {label}{where}",
            measured=f"{seconds * 1000:.1f} ms",
            baseline=f"{baseline * 1000:.1f} ms {SECTION['base']}",
            ratio=ratio(seconds, baseline),
            goal=_goal(label, seconds / baseline),
        )
    )


def section(name: str) -> None:
    print(name)
    SECTION["name"] = name


#: The goals of docs/sandbox.md (the most times the baseline), by row label.
GOALS = {
    "LocalSandbox.run (contained, one bwrap)": 1.3,
    "LocalSandbox session.run (contained)": 1.3,
}


def _goal(label: str, times: float) -> str:
    most = GOALS.get(label)
    if most is None:
        return "none"
    return f"<= {most}x the baseline: {'met' if times <= most else 'not met'}"


PYTHON = os.path.realpath(sys.executable)
#: The goal's command, and the same interpreter without site (the fixed cost shows).
COMMANDS = (f"{PYTHON} -c pass", f"{PYTHON} -I -S -c pass")
COMMAND = COMMANDS[0]


async def bare_subprocess(command: str = COMMAND) -> None:
    proc = await asyncio.create_subprocess_exec(
        "/bin/sh",
        "-c",
        command,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
        start_new_session=True,
    )
    await proc.communicate()


async def interleaved(
    variants: dict[str, Callable[[], Awaitable[object]]], repeat: int
) -> dict[str, float]:
    """Median seconds per variant, sampled round-robin so that load changes hit all alike."""
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for fn in variants.values():
        await fn()  # warm-up
    for _ in range(repeat):
        for name, fn in variants.items():
            start = time.perf_counter()
            await fn()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


async def bench_local(workspace: Path, command: str) -> float:
    """The per-command rows for ``command``; the contained run's median."""
    section(f"local tier per command, `{command}`")
    # The sandbox uses worker threads, which make every fork dearer; give the bare baseline
    # the same process state so the ratio measures the sandbox, not the thread pool.
    await asyncio.to_thread(lambda: None)
    async with LocalSandbox(workspace) as sandbox:
        env, watchdog = sandbox.env, sandbox._watchdog
        session = await sandbox.open_session()

        async def uncontained() -> None:
            await run_host_command(
                ["/bin/sh", "-c", command],
                cwd=workspace,
                env=env,
                timeout=None,
                stdin=None,
                cap=DEFAULT_OUTPUT_CAP,
                watchdog=watchdog,
            )

        variants: dict[str, Callable[[], Awaitable[object]]] = {
            "bare asyncio subprocess": lambda: bare_subprocess(command),
            "old path: host subprocess (uncontained)": uncontained,
            "LocalSandbox.run (contained, one bwrap)": lambda: sandbox.run(command),
            "LocalSandbox session.run (contained)": lambda: session.run(command),
        }
        found = probe_local_sandbox()
        if found.bwrap is not None:
            layout = Layout(
                workspace=workspace,
                home=workspace,
                tmp=workspace,
                read_only=tuple(interpreter_dirs()),
            )
            argv = [*bwrap_argv(found.bwrap, layout), "--", "/bin/sh", "-c", command]

            async def per_command_bwrap() -> None:
                proc = await asyncio.create_subprocess_exec(
                    *argv,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    stdin=asyncio.subprocess.DEVNULL,
                    env={},
                )
                await proc.communicate()
                assert proc.returncode == 0, "the per-command bwrap failed"

            variants["a new bwrap per command (not used)"] = per_command_bwrap
        medians = await interleaved(variants, LOCAL_RUNS // 2)
        bare = medians.pop("bare asyncio subprocess")
        row("bare asyncio subprocess", bare)
        for label, seconds in medians.items():
            row(label, seconds, bare)
        run = medians["LocalSandbox.run (contained, one bwrap)"]
    return run


async def bench_first(workspace: Path, run: float) -> None:
    section("local tier, the first command of a run (vs a warm `LocalSandbox.run`)")

    async def first_command() -> None:
        async with LocalSandbox(workspace) as box:
            await box.run(COMMAND)

    first = await timed(first_command, 5)
    row("start + first command + aclose", first, run)


async def docker_problem() -> str | None:
    try:
        import docker

        client = await asyncio.to_thread(docker.from_env)
        try:
            await asyncio.to_thread(client.api.inspect_image, DEFAULT_IMAGE)
        finally:
            client.close()
    except Exception as exc:
        return str(exc)
    return None


async def bench_docker(workspace: Path) -> None:
    problem = await docker_problem()
    if problem is not None:
        print(f"docker rows skipped: {problem}")
        return
    import docker

    client = await asyncio.to_thread(docker.from_env)
    try:

        async def docker_run() -> None:
            await asyncio.to_thread(
                client.containers.run,
                DEFAULT_IMAGE,
                ["true"],
                remove=True,
                network_mode="none",
            )

        section("docker tier per command, `true`")
        per_run = await timed(docker_run, DOCKER_RUNS)
        row("`docker run` per command", per_run)
        async with DockerSandbox(workspace) as sandbox:
            exec_cost = await timed(lambda: sandbox.run("true"), DOCKER_EXECS)
            row("DockerSandbox.run (exec in long-lived container)", exec_cost, per_run)
            session = await sandbox.open_session()
            shell = await timed(lambda: session.run("true"), DOCKER_EXECS)
            row("DockerSandbox session.run", shell, per_run)
    finally:
        client.close()


async def startup(make: Callable[[], LocalSandbox | DockerSandbox]) -> float:
    async def once() -> None:
        sandbox = make()
        try:
            await sandbox.start()
            await sandbox.run("true")
        finally:
            await sandbox.aclose()

    return await timed(once, 3)


async def bench_startup(workspace: Path) -> None:
    section("sandbox start-up (start + one command + aclose)")
    local = await startup(lambda: LocalSandbox(workspace))
    row("local", local)
    if await docker_problem() is not None:
        return
    runc = await startup(lambda: DockerSandbox(workspace))
    row("docker runc", runc, local)
    try:
        runsc = await startup(lambda: DockerSandbox(workspace, untrusted=True))
    except SandboxError as exc:
        print(f"  docker runsc skipped: {str(exc).split(';')[0]}")
    else:
        row("docker runsc (gVisor)", runsc, local)


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="driveros-bench-") as tmp:
        workspace = Path(tmp)
        runs = [await bench_local(workspace, command) for command in COMMANDS]
        await bench_first(workspace, runs[0])
        await bench_docker(workspace)
        await bench_startup(workspace)
    report("sandbox", ROWS)


if __name__ == "__main__":
    asyncio.run(main())
