"""The semantic tools' cost: the first call (cold: server start and indexing) and warm
``references`` p50/p99 on a generated 1,000-file Python project; a rename of a function used
in 50 files in one call versus the scripted edit-by-edit equivalent (one ``edit_file`` per
file, as a model without the tool does it). With ``--docker``, the same cold and warm
``references`` in the docker tier (the host's servers mounted read-only into the container)
first, side by side with the local tier. Results: bench/RESULTS.md ("semantic").

    python -m bench semantic [--files 1000] [--users 50] [--warm 60] [--docker]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench._results import Row, ratio, report
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


#: A cold first call (ms) and the warm calls' times (ms).
Timing = tuple[float, list[float]]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def references(box: ToolBox, files: int, users: int, warm: int) -> Timing:
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
    async with DockerSandbox(root, extra_mounts={s: t for s, t in mounts.items()}) as sandbox:
        assert (await sandbox.run("true")).exit_code == 0
        return (time.perf_counter() - t0) * 1000


async def mount_cost(root: Path, rounds: int = 6) -> tuple[float, float, int]:
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
    return a, b, len(mounts)


def docker_rows(start: tuple[float, float, int], docker: Timing, local: Timing) -> list[Row]:
    """The docker tier beside the local tier, measured in the same run."""
    bare, bound, mounts = start
    d50, l50 = statistics.median(docker[1]), statistics.median(local[1])
    return [
        Row(
            benchmark="semantic, docker tier: a container's start and first command with the "
            f"language servers bound read-only ({mounts} mounts), median of 6 "
            "(`python -m bench semantic --docker`)",
            measured=f"{bound:.0f} ms",
            baseline=f"{bare:.0f} ms without the mounts (same run)",
            ratio=ratio(bound, bare),
            goal="none: the cost of mounting the servers instead of baking them into the image",
        ),
        Row(
            benchmark="semantic, docker tier (runc): first call, `references {symbol}` on the "
            "generated 1,000-file project, basedpyright started in the container and indexing "
            "(same run; the docker tier goes first, on a colder page cache)",
            measured=f"{docker[0]:.0f} ms",
            baseline=f"{local[0]:.0f} ms the same call in the local tier (same run)",
            ratio=ratio(docker[0], local[0]),
            goal=f"cold <= 5 s: {'met' if docker[0] <= 5000 else 'not met'}",
        ),
        Row(
            benchmark=f"semantic, docker tier: warm `references` by position, {len(docker[1])} "
            "calls (same run)",
            measured=f"p50 {d50:.1f} ms, p99 {pct(docker[1], 0.99):.1f} ms",
            baseline=f"p50 {l50:.1f} ms, p99 {pct(local[1], 0.99):.1f} ms in the local tier",
            ratio=ratio(d50, l50),
            goal=f"warm p50 <= 100 ms: {'met' if d50 <= 100 else 'not met'}",
        ),
    ]


async def measure_docker(root: Path, files: int, users: int, warm: int) -> Timing:
    """The docker tier (runc): the container's start, then the same calls."""
    t0 = time.perf_counter()
    mounts = docker_server_mounts()
    async with DockerSandbox(root, extra_mounts={s: t for s, t in mounts.items()}) as sandbox:
        await sandbox.start()
        print(f"docker (runc): container start {(time.perf_counter() - t0) * 1000:.0f} ms")
        box = ToolBox(sandbox)
        found = await references(box, files, users, warm)
        await box.aclose()
    return found


async def rename_vs_edits(box: ToolBox) -> tuple[float, float, int, str]:
    """One ``rename`` call (ms), then the edit-by-edit equivalent on its result (back to the
    old name: ``search``, one ``edit_file`` per file; ms), its tool calls, the rename's
    summary line."""
    t0 = time.perf_counter()
    renamed = await box.call("rename", {"symbol": "compute_total", "new_name": "grand_total"}, None)
    one_call = (time.perf_counter() - t0) * 1000
    assert renamed.ok, renamed.output
    t0 = time.perf_counter()
    found = await box.call("search", {"pattern": r"\bgrand_total\b"}, None)
    paths = sorted({line.split(":", 1)[0] for line in found.output.splitlines()})
    for path in paths:
        edit = {"path": path, "old_string": "grand_total", "new_string": "compute_total"}
        out = await box.call("edit_file", {**edit, "replace_all": True}, None)
        assert out.ok, out.output
    scripted = (time.perf_counter() - t0) * 1000
    return one_call, scripted, 1 + len(paths), renamed.output.splitlines()[0]


def local_rows(
    files: int, users: int, local: Timing, rename: tuple[float, float, int, str]
) -> list[Row]:
    """The local tier's rows: cold and warm ``references``, rename against edit by edit."""
    cold, samples = local
    p50 = statistics.median(samples)
    one_call, scripted, calls, summary = rename
    return [
        Row(
            benchmark="semantic: first call, `references {symbol}` on a generated "
            f"{files:,}-file Python project, basedpyright started in the local sandbox and "
            "indexing (`python -m bench semantic`)",
            measured=f"{cold:.0f} ms",
            baseline="5 s goal",
            ratio=f"{cold / 5000:.2f} of the goal",
            goal=f"cold <= 5 s: {'met' if cold <= 5000 else 'not met'}",
        ),
        Row(
            benchmark=f"semantic: warm `references` by position, {len(samples)} calls over the "
            "same project (same run)",
            measured=f"p50 {p50:.1f} ms, p99 {pct(samples, 0.99):.1f} ms",
            baseline="100 ms goal (p50)",
            ratio=ratio(p50, 100),
            goal=f"warm p50 <= 100 ms: {'met' if p50 <= 100 else 'not met'}",
        ),
        Row(
            benchmark=f"semantic: rename of a function used in {users} files "
            f"({summary.rsplit(': ', 1)[-1]}) in one `rename` call (same run)",
            measured=f"{one_call:.0f} ms, 1 tool call",
            baseline=f"{scripted:.0f} ms and {calls} tool calls scripted edit-by-edit "
            "(`search`, then `edit_file` per file)",
            ratio=f"{one_call / scripted:.1f}x the tool time; 1/{calls} of the calls (each call "
            "batch costs the model a turn)",
        ),
    ]


async def measure(files: int, users: int, warm: int, docker: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp, "ws")
        generate(root, files, users)
        in_docker, start = None, None
        if docker:
            start = await mount_cost(root)
            in_docker = await measure_docker(root, files, users, warm)
        async with LocalSandbox(root, read_only=server_mounts()) as sandbox:
            print("local (bubblewrap):")
            box = ToolBox(sandbox)
            local = await references(box, files, users, warm)
            rename = await rename_vs_edits(box)
            await box.aclose()
    report("semantic", local_rows(files, users, local, rename))
    if in_docker is not None and start is not None:
        report("semantic-docker", docker_rows(start, in_docker, local))


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
