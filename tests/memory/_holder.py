"""A process that holds a memory store open and writes when told (fault tests).

python -m tests.memory._holder DB
Reads one command per line from stdin: ``write TEXT`` (one fact; prints ``ok`` or
``refused: MESSAGE``), anything else closes the store and prints ``closed``. Prints
``open`` once the store is open, or ``open refused: MESSAGE`` and exits.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from driveros import MemoryStoreError
from driveros.memory import MemoryStore, Provenance


def _say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


async def main(db: str) -> None:
    try:
        store = await MemoryStore.open(Path(db), scope="shared", timeout=60)
    except MemoryStoreError as exc:
        _say(f"open refused: {exc}")
        return
    _say("open")
    while True:
        line = await asyncio.to_thread(sys.stdin.readline)
        command, _, arg = line.strip().partition(" ")
        if command == "write":
            try:
                await store.apply(adds=[arg], provenance=Provenance(run_id="holder"))
                _say("ok")
            except MemoryStoreError as exc:
                _say(f"refused: {exc}")
        else:
            break
    await store.aclose()
    _say("closed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
