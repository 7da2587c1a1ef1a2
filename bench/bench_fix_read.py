"""What the language server's fix path reads of a big file: the lines it needs, streamed
(``driveros_lsp._text.read_lines``), side by side with reading the whole file and splitting it
(what it did before). For a 100 MB text file (diagnostics on lines 10 and 500 000) and a
600 MB sparse file (one short line, then zeros without a newline): the time (median of a few
runs) and the peak RSS each read adds, measured in a fresh child process per variant.
Ratios, never pass/fail timings.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench._results import Row, goal_met, ratio, report

RUNS = 3
CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from driveros_lsp._text import read_lines, split_lines
from driveros.review import read_text
path, variant, wanted = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
if variant == "streamed":
    got = read_lines(path, set(wanted))
else:
    text = read_text(path)
    lines = split_lines(text or "")
    got = {i: lines[i] for i in wanted if i < len(lines)}
ms = (time.perf_counter() - start) * 1000
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(json.dumps({"ms": ms, "mib": grown, "lines": len(got)}))
"""


def _measure(path: Path, variant: str, wanted: list[int]) -> tuple[float, float]:
    runs = []
    for _ in range(RUNS):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(path), variant, json.dumps(wanted)],
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(out.stdout))
    return statistics.median(r["ms"] for r in runs), max(r["mib"] for r in runs)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp) / "big.py"
        with open(text, "w") as fh:
            line = "value = compute(alpha, beta)  # é\n"
            fh.write(line * (100 * 1024 * 1024 // len(line.encode())))
        sparse = Path(tmp) / "sparse.py"
        with open(sparse, "wb") as fh:
            fh.write(b"x = 1\n")
            fh.truncate(600 * 1024 * 1024)
        cases = [
            ("a closed 100 MB text file, lines 10 and 500 000", text, [10, 500_000]),
            ("a closed 600 MB sparse file (one line, then zeros), lines 0 and 3", sparse, [0, 3]),
        ]
        rows: list[Row] = []
        for name, path, wanted in cases:
            new_ms, new_mib = _measure(path, "streamed", wanted)
            old_ms, old_mib = _measure(path, "whole", wanted)
            where = " (`make bench ARGS=fix_read`): streamed `read_lines`" if not rows else ""
            rows.append(
                Row(
                    benchmark=f"fix positions on {name}{where or ' (same run)'}",
                    measured=f"{new_ms:.0f} ms, +{new_mib:.0f} MiB peak RSS",
                    baseline=f"{old_ms:.0f} ms, +{old_mib:.0f} MiB reading the whole file and "
                    "splitting it",
                    ratio=ratio(new_ms, old_ms, 3),
                    goal=goal_met("memory flat", new_mib < 16),
                )
            )
        report("fix_read", rows)


if __name__ == "__main__":
    main()
