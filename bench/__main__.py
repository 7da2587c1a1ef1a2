"""Run every ``bench/bench_*.py`` module's ``main()`` (or the ones named on the command line).

python -m bench            # all
python -m bench llm agent  # bench_llm.py and bench_agent.py
"""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent
    names = argv or sorted(p.stem.removeprefix("bench_") for p in here.glob("bench_*.py"))
    failed = 0
    for name in names:
        module = importlib.import_module(f"bench.bench_{name}")
        print(f"\n=== bench {name} ===", flush=True)
        try:
            outcome = module.main()
            if inspect.iscoroutine(outcome):
                import asyncio

                asyncio.run(outcome)
        except Exception as exc:  # a broken benchmark must not hide the others
            failed += 1
            print(f"bench {name} failed: {exc!r}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
