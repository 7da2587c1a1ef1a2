"""The semantic tools' cost: the first call (cold: server start and indexing) and warm
``references`` p50/p99 on a generated 1,000-file Python project; a rename of a function used
in 50 files in one call versus the scripted edit-by-edit equivalent (one ``edit_file`` per
file, as a model without the tool does it). Results: bench/RESULTS.md ("semantic").

    python bench/bench_semantic.py [--files 1000] [--users 50] [--warm 60]
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
from driveros.sandbox import LocalSandbox
from driveros.semantic import server_mounts


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


async def measure(files: int, users: int, warm: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp, "ws")
        generate(root, files, users)
        async with LocalSandbox(root, read_only=server_mounts()) as sandbox:
            box = ToolBox(sandbox)
            started = time.perf_counter()
            first = await box.call("references", {"symbol": "compute_total"}, None)
            cold = time.perf_counter() - started
            assert first.ok, first.output
            print(f"cold first call (references by symbol): {cold * 1000:.0f} ms")
            print(first.output.splitlines()[0])
            samples = []
            for n in range(warm):
                i = (n * 37) % (files - 2)
                col = 5
                args = {"path": f"pkg/m{i}.py", "line": 5 if i else 4, "column": col}
                if i >= users:
                    args["line"] = 4 if i else 3
                t0 = time.perf_counter()
                out = await box.call("references", args, None)
                samples.append((time.perf_counter() - t0) * 1000)
                assert out.ok, out.output
            print(
                f"warm references: p50 {statistics.median(samples):.1f} ms, "
                f"p99 {pct(samples, 0.99):.1f} ms over {len(samples)} calls"
            )
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
    args = parser.parse_args()
    asyncio.run(measure(args.files, args.users, args.warm))
    return 0


if __name__ == "__main__":
    sys.exit(main())
