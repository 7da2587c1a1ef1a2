"""The semantic tools' cost: the first call (cold: server start and indexing) and warm
``references`` p50/p99 on a generated 1,000-file Python project; a rename of a function used
in 50 files in one call versus the scripted edit-by-edit equivalent (one ``edit_file`` per
file, as a model without the tool does it). With ``--docker``, the same cold and warm
``references`` in the docker tier (the host's servers mounted read-only into the container)
first, side by side with the local tier. Results: bench/RESULTS.md ("semantic").

    python bench/bench_semantic.py [--files 1000] [--users 50] [--warm 60] [--docker]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from driveros.agent._tools import ToolBox
from driveros.sandbox import DockerSandbox, LocalSandbox
from driveros.semantic import docker_server_mounts, server_mounts


def generate(root: Path, files: int, users: int) -> None:
    """``pkg/core.py`` defines ``compute_total``; ``pkg/m{i}.py`` chain-imports its neighbour
    and the first ``users`` of them call ``compute_total``."""
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "core.py").write_text(
        "def compute_total(items: list[int]) -> int:\n    return sum(items)\n"
    )
    for i in range(files - 2):
        lines = []
        if i:
            lines.append(f"from pkg.m{i - 1} import f{i - 1}\n")
        if i < users:
            lines.append("from pkg.core import compute_total\n")
        lines.append(f"\n\ndef f{i}(x: int) -> int:\n")
        prev = f"f{i - 1}(x)" if i else "x"
        use = " + compute_total([x])" if i < users else ""
        lines.append(f"    return {prev} + {i}{use}\n")
        (pkg / f"m{i}.py").write_text("".join(lines))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def references(box: ToolBox, files: int, users: int, warm: int) -> tuple[float, list[float]]:
    """The cold first call (ms, printed with its answer's first line) and ``warm`` timed
    calls by position (ms)."""
    started = time.perf_counter()
    first = await box.call("references", {"symbol": "compute_total"}, None)
    cold = (time.perf_counter() - started) * 1000
    assert first.ok, first.output
    print(f"  cold first call (references by symbol): {cold:.0f} ms")
    print("  " + first.output.splitlines()[0])
    samples = []
    for n in range(warm):
        i = (n * 37) % (files - 2)
        args = {"path": f"pkg/m{i}.py", "line": 5 if i else 4, "column": 5}
        if i >= users:
            args["line"] = 4 if i else 3
        t0 = time.perf_counter()
        out = await box.call("references", args, None)
        samples.append((time.perf_counter() - t0) * 1000)
        assert out.ok, out.output
    print(
        f"  warm references: p50 {statistics.median(samples):.1f} ms, "
        f"p99 {pct(samples, 0.99):.1f} ms over {len(samples)} calls"
    )
    return cold, samples


async def container_start(root: Path, mounts: dict[str, str]) -> float:
    """One container's start and first command (ms)."""
    t0 = time.perf_counter()
    async with DockerSandbox(root, extra_mounts=mounts) as sandbox:
        assert (await sandbox.run("true")).exit_code == 0
        return (time.perf_counter() - t0) * 1000


async def mount_cost(root: Path, rounds: int = 6) -> None:
    """What binding the servers costs a container's start (the decision against baking them
    into the image: docs/semantic.md, "Tiers")."""
    mounts = docker_server_mounts()
    bare, bound = [], []
    for _ in range(rounds):
        bare.append(await container_start(root, {}))
        bound.append(await container_start(root, mounts))
    a, b = statistics.median(bare), statistics.median(bound)
    print(
        f"docker start: {a:.0f} ms bare, {b:.0f} ms with {len(mounts)} server mounts ({b / a:.2f})"
    )


async def measure_docker(
    root: Path, files: int, users: int, warm: int
) -> tuple[float, list[float]]:
    """The docker tier (runc): the container's start, then the same calls."""
    t0 = time.perf_counter()
    async with DockerSandbox(root, extra_mounts=docker_server_mounts()) as sandbox:
        await sandbox.start()
        print(f"docker (runc): container start {(time.perf_counter() - t0) * 1000:.0f} ms")
        box = ToolBox(sandbox)
        found = await references(box, files, users, warm)
        await box.aclose()
    return found


async def measure(files: int, users: int, warm: int, docker: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp, "ws")
        generate(root, files, users)
        in_docker = None
        if docker:
            await mount_cost(root)
            in_docker = await measure_docker(root, files, users, warm)
        async with LocalSandbox(root, read_only=server_mounts()) as sandbox:
            print("local (bubblewrap):")
            box = ToolBox(sandbox)
            cold, samples = await references(box, files, users, warm)
            if in_docker is not None:
                ratio = statistics.median(in_docker[1]) / statistics.median(samples)
                print(f"docker / local: cold {in_docker[0] / cold:.2f}, warm p50 {ratio:.2f}")
            t0 = time.perf_counter()
            renamed = await box.call(
                "rename", {"symbol": "compute_total", "new_name": "grand_total"}, None
            )
            one_call = time.perf_counter() - t0
            assert renamed.ok, renamed.output
            print(f"rename in one call: {one_call * 1000:.0f} ms; {renamed.output.splitlines()[0]}")
            # The edit-by-edit equivalent on the result: back to the old name, file by file.
            t0 = time.perf_counter()
            found = await box.call("search", {"pattern": r"\bgrand_total\b"}, None)
            paths = sorted({line.split(":", 1)[0] for line in found.output.splitlines()})
            calls = 1
            for path in paths:
                out = await box.call(
                    "edit_file",
                    {
                        "path": path,
                        "old_string": "grand_total",
                        "new_string": "compute_total",
                        "replace_all": True,
                    },
                    None,
                )
                calls += 1
                assert out.ok, out.output
            scripted = time.perf_counter() - t0
            print(
                f"edit-by-edit: {scripted * 1000:.0f} ms in {calls} tool calls "
                f"({len(paths)} files; a model pays one turn per call batch)"
            )
            await box.aclose()
    print(f"load {os.getloadavg()[0]:.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--warm", type=int, default=60)
    parser.add_argument("--docker", action="store_true", help="also the docker tier, first")
    args = parser.parse_args()
    asyncio.run(measure(args.files, args.users, args.warm, args.docker))
    return 0


if __name__ == "__main__":
    sys.exit(main())
