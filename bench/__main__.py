"""Run every ``bench/bench_*.py`` module's ``main()`` (or the ones named on the command line);
each reports its rows into ``bench/RESULTS.md`` (``bench/_results.py``).

python -m bench                        # all
python -m bench llm agent              # bench_llm.py and bench_agent.py
python -m bench checkpoint --turns 5   # options after one name go to that benchmark
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent
    known = sorted(p.stem.removeprefix("bench_") for p in here.glob("bench_*.py"))
    first = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
    names, options = argv[:first] or known, argv[first:]
    if options and len(names) != 1:
        print("python -m bench: options go to exactly one named benchmark", file=sys.stderr)
        return 2
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"python -m bench: no benchmark {', '.join(unknown)} (known: {', '.join(known)})")
        return 2
    failed = 0
    for name in names:
        module = importlib.import_module(f"bench.bench_{name}")
        print(f"\n=== bench {name} ===", flush=True)
        sys.argv = [str(here / f"bench_{name}.py"), *options]
        try:
            outcome = module.main()
            if inspect.iscoroutine(outcome):
                asyncio.run(outcome)
        except Exception as exc:  # a broken benchmark must not hide the others
            failed += 1
            print(f"bench {name} failed: {exc!r}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
