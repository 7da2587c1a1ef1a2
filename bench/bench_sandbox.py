"""Sandbox overheads, side by side as ratios (never pass/fail).

- per command: LocalSandbox.run vs a bare asyncio.create_subprocess_exec; a local shell
  session command vs LocalSandbox.run;
- docker: exec in the long-lived container vs `docker run` per command;
- start-up (start, one command, aclose) per tier: local, docker runc, docker runsc.

Docker rows are skipped, with the reason, when no daemon or image is available.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from driveros.sandbox import DEFAULT_IMAGE, DockerSandbox, LocalSandbox, SandboxError

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


def row(label: str, seconds: float, baseline: float | None = None) -> None:
    ratio = f"{seconds / baseline:7.3f}x" if baseline else "   base "
    print(f"  {label:<46} {seconds * 1000:9.2f} ms  {ratio}")


async def bare_subprocess() -> None:
    proc = await asyncio.create_subprocess_exec(
        "/bin/sh",
        "-c",
        "true",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
    )
    await proc.communicate()


async def bench_local(workspace: Path) -> None:
    print("per command, local tier")
    # The sandbox uses worker threads, which make every fork dearer; give the bare baseline
    # the same process state so the ratio measures the sandbox, not the thread pool.
    await asyncio.to_thread(lambda: None)
    bare = await timed(bare_subprocess, LOCAL_RUNS)
    row("bare asyncio.create_subprocess_exec", bare)
    async with LocalSandbox(workspace) as sandbox:
        run = await timed(lambda: sandbox.run("true"), LOCAL_RUNS)
        row("LocalSandbox.run", run, bare)
        session = await sandbox.open_session()
        shell = await timed(lambda: session.run("true"), LOCAL_RUNS)
        row("LocalSandbox session.run (no new process)", shell, bare)


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

        print("per command, docker tier")
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
    print("start-up (start + one command + aclose)")
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
        await bench_local(workspace)
        await bench_docker(workspace)
        await bench_startup(workspace)


if __name__ == "__main__":
    asyncio.run(main())
