"""A separate writer process for the concurrency and kill -9 tests.

python -m tests.memory._writer DB PREFIX BATCHES BATCH_SIZE
Writes BATCHES transactions of BATCH_SIZE facts and prints "committed N" after each.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from driveros.memory import MemoryStore, Provenance


async def main(db: str, prefix: str, batches: int, size: int) -> None:
    async with await MemoryStore.open(Path(db), scope="shared", timeout=120) as store:
        for b in range(batches):
            texts = [f"{prefix} batch {b} fact {i} about the build" for i in range(size)]
            await store.apply(adds=texts, provenance=Provenance(run_id=f"{prefix}-{b}"))
            print(f"committed {b + 1}", flush=True)


if __name__ == "__main__":
    db, prefix, batches, size = sys.argv[1:5]
    asyncio.run(main(db, prefix, int(batches), int(size)))
